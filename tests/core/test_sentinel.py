"""`redis+sentinel://` URLs: what they name, the errors a bad one gets, passwords reaching
the master and the Sentinels of a real cluster, TLS to a real TLS Sentinel and master, and
a worker given only the Sentinels' addresses running jobs (tests/support/sentinel_cluster.py)."""

import shutil
import subprocess

import pytest
import redis

from tests.core.failover_jobs import LEDGER
from tests.support.redis_server import RedisServer, free_port
from tests.support.sentinel_cluster import (
    SERVICE,
    SentinelCluster,
    require_sentinel,
    sentinel_binary,
)
from tests.support.workers import wait_until
from wurk_django.core import Client, Config
from wurk_django.core.errors import ConfigurationError, RedisUnavailableError
from wurk_django.core.redis import RedisConnection, close_connections, mask_url
from wurk_django.core.sentinel import MasterConnection, MasterSSLConnection, parse_url


@pytest.mark.parametrize("url, sentinels, service, db, password, tls", [
    ("redis+sentinel://10.0.0.1:26380,10.0.0.2,[::1]:5000/mymaster",
     (("10.0.0.1", 26380), ("10.0.0.2", 26379), ("::1", 5000)), "mymaster", 0, None, False),
    ("rediss+sentinel://:s3cret@sentinel.internal/cache/3", (("sentinel.internal", 26379),),
     "cache", 3, "s3cret", True),
])
def test_a_sentinel_url_names_the_sentinels_the_master_and_the_database(
        url, sentinels, service, db, password, tls):
    target = parse_url(url)
    assert (target.sentinels, target.service, target.db, target.password, target.tls) == \
        (sentinels, service, db, password, tls)
    assert Config(redis_url=url).redis_url == url


@pytest.mark.parametrize("url, text", [
    ("redis+sentinel://10.0.0.1:26379", "must name the master after the Sentinels"),
    ("redis+sentinel://10.0.0.1:26379/", "must name the master after the Sentinels"),
    ("redis+sentinel://10.0.0.1:26379/mymaster/x", "takes only a database number"),
    ("redis+sentinel://10.0.0.1:port/mymaster", "the Sentinel port in '10.0.0.1:port'"),
    ("redis+sentinel://a,,b/mymaster", "a Sentinel address is empty"),
    ("redis+sentinel://a/mymaster?ssl=true", "unknown option 'ssl'"),
])
def test_a_bad_sentinel_url_is_a_configuration_error_naming_the_problem(url, text):
    with pytest.raises(ConfigurationError, match=text) as raised:
        Config(redis_url=url)
    assert raised.value.field == "redis_url"


def test_both_passwords_are_masked_in_logs():
    assert mask_url("redis+sentinel://app:pw1@h1,h2/m?sentinel_password=pw2") == \
        "redis+sentinel://app:****@h1,h2/m?sentinel_password=****"


def test_tls_options_reach_the_master_and_the_sentinels():
    options = {"ssl_ca_certs": "/etc/ssl/ca.pem", "ssl_cert_reqs": "required"}
    config = Config(redis_url="rediss+sentinel://127.0.0.1:1/m", redis_options=options)
    connection = RedisConnection(config.redis_url, **config.redis_options)
    try:
        assert connection.pool.connection_class is MasterSSLConnection
        assert {k: connection.pool.connection_kwargs[k] for k in options} == options
        sentinel_kwargs = connection.pool.sentinel_manager.sentinels[0].connection_pool \
            .connection_kwargs
        assert {k: sentinel_kwargs[k] for k in options} == options
        assert connection.pool.sentinel_manager.sentinels[0].connection_pool \
            .connection_class.__name__ == "SSLConnection"
    finally:
        connection.close()
    plain = RedisConnection("redis+sentinel://127.0.0.1:1/m")
    assert plain.pool.connection_class is MasterConnection
    plain.close()


def test_sentinel_kwargs_replace_the_sentinels_connection_options():
    with pytest.raises(ConfigurationError, match="not a redis-py connection option"):
        Config(redis_url="redis://h/0", redis_options={"sentinel_kwargs": {}})
    config = Config(redis_url="redis+sentinel://127.0.0.1:1/m",
                    redis_options={"sentinel_kwargs": {"password": "x", "socket_timeout": 1}})
    connection = RedisConnection(config.redis_url, **config.redis_options)
    kwargs = connection.pool.sentinel_manager.sentinels[0].connection_pool.connection_kwargs
    assert (kwargs["password"], kwargs["socket_timeout"]) == ("x", 1)
    connection.close()


@pytest.fixture(scope="module")
def locked_cluster():
    require_sentinel()
    cluster = SentinelCluster(password="master-pw", sentinel_password="sentinel-pw")
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()
        close_connections()


def with_passwords(cluster, master="master-pw", sentinel="sentinel-pw") -> str:
    hosts = cluster.url.partition("://")[2]
    return f"redis+sentinel://:{master}@{hosts}?sentinel_password={sentinel}"


def test_passwords_reach_the_master_and_the_sentinels(locked_cluster):
    connection = RedisConnection(with_passwords(locked_cluster))
    try:
        connection.write(connection.client.set, "wurk-test:k", "v")
        assert connection.dedicated().call("GET", "wurk-test:k") == b"v"
        assert connection.execute_batch([("INCR", "wurk-test:n")]) == [1]
        assert locked_cluster.client(locked_cluster.master.port).get("wurk-test:k") == b"v"
    finally:
        connection.close()


@pytest.mark.parametrize("master, sentinel, text", [
    ("master-pw", "wrong", "No master found"),
    ("wrong", "sentinel-pw", "invalid username-password pair"),
])
def test_a_wrong_password_is_a_redis_error_that_shows_no_password(
        locked_cluster, master, sentinel, text):
    connection = RedisConnection(with_passwords(locked_cluster, master, sentinel))
    try:
        with pytest.raises(RedisUnavailableError, match=text) as raised:
            connection.ping()
        assert "wrong" not in str(raised.value) and "-pw" not in str(raised.value)
    finally:
        connection.close()


def test_a_worker_given_only_the_sentinels_runs_jobs(locked_cluster, start_worker, redis_url,
                                                      redis_client):
    url = with_passwords(locked_cluster)
    start_worker("-c", "2", require="tests.core.failover_jobs", redis=url,
                 env={"LEDGER_URL": redis_url})
    client = Client(Config(redis_url=url))
    for seq in range(20):
        client.push({"class": "tests.core.failover_jobs.book", "args": [seq]})
    wait_until(lambda: redis_client.llen(LEDGER) == 20, 30, message="20 jobs run")


# --- TLS: rediss+sentinel:// to a TLS Sentinel and a TLS master -----------------------

def make_certificates(folder) -> dict:
    """A throwaway CA and a certificate for 127.0.0.1 it signed (openssl, EC keys)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    # The extensions Python 3.13's strict verification asks of a CA and of a server.
    openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
            "-subj", "/CN=wurk-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", *curve, "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1")
    (folder / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\nauthorityKeyIdentifier=keyid\n"
        "subjectKeyIdentifier=hash\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.crt", "-days", "1", "-extfile", "san.ext")
    return {"ca": str(folder / "ca.crt"), "cert": str(folder / "server.crt"),
            "key": str(folder / "server.key")}


@pytest.fixture
def tls_sentinel(tmp_path):
    """A master and a Sentinel that speak TLS (each also on a plain port for the test's
    own helpers); the Sentinel monitors the master's TLS port."""
    require_sentinel()
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed; apt-get install openssl")
    files = make_certificates(tmp_path)
    tls = ("--tls-cert-file", files["cert"], "--tls-key-file", files["key"],
           "--tls-ca-cert-file", files["ca"], "--tls-auth-clients", "no")
    master_tls = free_port()
    master = RedisServer(extra_args=("--tls-port", str(master_tls), *tls)).start()
    sentinel_tls, sentinel_plain = free_port(), free_port()
    conf = tmp_path / "sentinel.conf"
    conf.write_text("\n".join([
        f"port {sentinel_plain}", f"tls-port {sentinel_tls}", "bind 127.0.0.1",
        f"dir {tmp_path}", "tls-replication yes", f"tls-cert-file {files['cert']}",
        f"tls-key-file {files['key']}", f"tls-ca-cert-file {files['ca']}",
        "tls-auth-clients no", f"sentinel monitor {SERVICE} 127.0.0.1 {master_tls} 1"]) + "\n")
    process = subprocess.Popen([sentinel_binary(), str(conf)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    plain = redis.Redis(port=sentinel_plain, decode_responses=True)
    try:
        wait_until(lambda: _flags(plain) == "master", 20, 0.05, "the Sentinel to see the master")
        yield {"url": f"rediss+sentinel://127.0.0.1:{sentinel_tls}/{SERVICE}",
               "ca": files["ca"], "master": master}
    finally:
        plain.close()
        process.kill()
        process.wait(10)
        master.cleanup()


def _flags(client) -> str | None:
    try:
        return client.sentinel_master(SERVICE).get("flags")
    except redis.RedisError:
        return None


def test_tls_reaches_the_sentinel_and_the_master(tls_sentinel):
    config = Config(redis_url=tls_sentinel["url"],
                    redis_options={"ssl_ca_certs": tls_sentinel["ca"]})
    connection = RedisConnection(config.redis_url, **config.redis_options)
    try:
        connection.write(connection.client.set, "wurk-test:tls", "v")
        assert connection.execute_batch([("GET", "wurk-test:tls")]) == [b"v"]
    finally:
        connection.close()
    assert redis.Redis(port=tls_sentinel["master"].port).get("wurk-test:tls") == b"v"
    untrusted = RedisConnection(tls_sentinel["url"])  # the system CAs: not ours
    try:
        with pytest.raises(RedisUnavailableError, match="certificate verify failed"):
            untrusted.ping()
    finally:
        untrusted.close()
