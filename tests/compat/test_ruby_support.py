"""Without Ruby's Sidekiq the interop tests skip saying how to install it (and `make test`,
which installs it, turns any such skip into a failure)."""

import pytest

from tests.support import ruby


@pytest.fixture
def no_cached_version():
    ruby.sidekiq_version.cache_clear()
    yield
    ruby.sidekiq_version.cache_clear()


def test_without_ruby_the_reason_says_how_to_install_it(monkeypatch, tmp_path,
                                                        no_cached_version):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no ruby on PATH
    reason = ruby.missing_sidekiq()
    assert reason.startswith("ruby is not installed")
    assert "apt-get install ruby-sidekiq" in reason
    with pytest.raises(pytest.skip.Exception, match="apt-get install ruby-sidekiq"):
        ruby.require_sidekiq()


def test_ruby_without_sidekiq_is_told_apart(monkeypatch, tmp_path, no_cached_version):
    fake = tmp_path / "ruby"
    fake.write_text("#!/bin/sh\necho 'cannot load such file -- sidekiq' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = ruby.missing_sidekiq()
    assert reason.startswith('Ruby cannot `require "sidekiq"`')
    assert "gem install sidekiq" in reason
