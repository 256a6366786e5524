"""Argument encryption (`encrypt=True`): the last positional argument of a job, "the
secret bag", is stored AES-256-GCM encrypted, under a numbered key version.

The push replaces it with an envelope `{"__wurk_enc__": true, "v": <key version>, "iv",
"ct", "tag"}` (base64, a fresh 12-byte IV per push); earlier arguments stay readable so
the job can still be found. The worker decrypts it just before the job's middleware
and `perform` run, and puts the envelope back afterwards, so retries, the dead set and
error handlers only ever see ciphertext. Keys come from a resolver, `version -> 32
bytes` (the environment, files, a KMS), cached per version once resolved.

Never plaintext by accident: `encrypt=True` without keys raises at the push, and nothing
reaches Redis. An envelope that cannot be decrypted (no key for its version, a key of the
wrong size, a tampered ciphertext, a malformed envelope) will not decrypt on a retry
either: the job goes straight to the dead set, untouched, with `error_class`
"encryption_error". Restore the key and retry it from there.

Needs the `cryptography` package: `pip install "wurk-django[crypto]"`.
"""

import base64
import binascii
import importlib
import logging
import os
import threading
from typing import Any

from . import statsd
from .errors import ConfigurationError, EncryptionError
from .features import HOOKS, ClientHook, JobHandled, JobHook
from .metrics import metric_class
from .payload import dumps, error_class, error_message, loads
from .retry import run_death_handlers, send_to_dead

logger = logging.getLogger("wurk")

MARKER = "__wurk_enc__"
KEY_BYTES, IV_BYTES, TAG_BYTES = 32, 12, 16
PLACEHOLDER = "[encrypted data]"
ERROR_CLASS = "encryption_error"
# Client hooks: before the unique lock (50), whose digest must not cover a plaintext
# secret. Job hooks: innermost of the features, right around middleware and perform.
CLIENT_ORDER = 40
JOB_ORDER = 80
_FRAGMENT_MIN = 4  # shorter pieces of a secret are not scrubbed from error messages

_enabled: dict | None = None  # set by enable(): for workers configured without Django
_keys: dict[tuple, Any] = {}
_resolvers: dict[str, Any] = {}
_lock = threading.Lock()


def enable(active_version: int, resolver) -> None:
    """Encrypt with key `active_version`; `resolver(version)` returns each version's key
    (or its import path). Configs without their own `encryption` setting use this."""
    from .validation import encryption
    global _enabled
    try:
        _enabled = encryption({"active_version": active_version, "key_resolver": resolver})
    except ConfigurationError as exc:
        raise ConfigurationError(str(exc).replace("encryption[", "enable(")) from None
    forget_keys()


def disable() -> None:
    global _enabled
    _enabled = None
    forget_keys()


def forget_keys() -> None:
    """Drop cached keys: the next use asks the resolver again (a rotated or restored key)."""
    with _lock:
        _keys.clear()
        _resolvers.clear()


def settings_for(config) -> dict | None:
    return getattr(config, "encryption", None) or _enabled


def require_key(config) -> None:
    """Raise unless `config` can encrypt now (called where a push is accepted)."""
    _active_key(config)


# --- keys ---------------------------------------------------------------------------

def _aesgcm():
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise ConfigurationError('encrypt=True needs the cryptography package: pip install '
                                 '"wurk-django[crypto]"') from None
    return AESGCM


def resolver_of(settings: dict):
    resolver = settings["key_resolver"]
    if callable(resolver):
        return resolver
    found = _resolvers.get(resolver)
    if found is None:
        module, _, name = resolver.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(f"the encryption key resolver {resolver!r} cannot be "
                                     f"imported: {exc}") from None
        if not callable(found):
            raise ConfigurationError(f"the encryption key resolver {resolver!r} is not a "
                                     f"function")
        _resolvers[resolver] = found
    return found


def key_for(settings: dict, version) -> Any:
    """The AESGCM cipher for a key version. EncryptionError when the resolver has no such
    key or it is not 32 bytes; any other resolver error (a KMS timeout) propagates."""
    resolver = resolver_of(settings)
    cache_key = (id(resolver), version)
    cipher = _keys.get(cache_key)
    if cipher is not None:
        return cipher
    aesgcm = _aesgcm()
    try:
        key = resolver(version)
    except (KeyError, IndexError, LookupError) as exc:
        raise EncryptionError(f"KeyError: no encryption key for version {version!r} "
                              f"({type(exc).__name__}: {exc})") from None
    if key is None:
        raise EncryptionError(f"KeyError: no encryption key for version {version!r} (the "
                              f"resolver returned None)")
    if not isinstance(key, (bytes, bytearray)) or len(key) != KEY_BYTES:
        size = f"{len(key)} bytes" if isinstance(key, (bytes, bytearray)) else type(key).__name__
        raise EncryptionError(f"ValueError: the encryption key for version {version!r} must "
                              f"be {KEY_BYTES} raw bytes, got {size}")
    cipher = aesgcm(bytes(key))
    with _lock:  # only a key that worked is kept: a restored one is picked up at once
        _keys[cache_key] = cipher
    return cipher


def _active_key(config) -> tuple[int, Any]:
    settings = settings_for(config)
    if settings is None:
        raise ConfigurationError("encrypt=True but no encryption key is configured: set "
                                 "WURK['ENCRYPTION'] = {'ACTIVE_VERSION': 1, 'KEY_RESOLVER': "
                                 "'myproject.crypto.key_for'} (or call "
                                 "wurk_django.core.encryption.enable()); nothing was pushed")
    version = settings["active_version"]
    try:
        return version, key_for(settings, version)
    except EncryptionError as exc:
        raise EncryptionError(f"cannot encrypt with the active key: {exc}; nothing was "
                              f"pushed") from None


# --- envelopes ----------------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encrypt_value(value, version: int, cipher) -> dict:
    iv = os.urandom(IV_BYTES)
    sealed = cipher.encrypt(iv, dumps(value), None)
    return {MARKER: True, "v": version, "iv": _b64(iv), "ct": _b64(sealed[:-TAG_BYTES]),
            "tag": _b64(sealed[-TAG_BYTES:])}


def is_marked(value) -> bool:
    """True for anything that claims to be an envelope, well formed or not."""
    return isinstance(value, dict) and MARKER in value


def is_envelope(value) -> bool:
    return (is_marked(value) and value[MARKER] is True
            and all(name in value for name in ("v", "iv", "ct", "tag")))


def _unb64(envelope: dict, name: str) -> bytes:
    try:
        return base64.b64decode(envelope[name], validate=True)
    except (binascii.Error, TypeError, ValueError) as exc:
        raise EncryptionError(f"ValueError: the envelope's {name!r} is not base64 "
                              f"({exc})") from None


def decrypt_envelope(envelope, settings: dict | None):
    """The value an envelope holds; EncryptionError when it cannot be had from it."""
    if not is_envelope(envelope):
        raise EncryptionError("ValueError: malformed envelope (it needs "
                              f"{MARKER!r}: true, 'v', 'iv', 'ct' and 'tag')")
    if settings is None:
        raise EncryptionError("KeyError: no encryption key is configured in this process")
    version = envelope["v"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise EncryptionError(f"ValueError: malformed envelope: version {version!r}")
    iv, ct, tag = (_unb64(envelope, name) for name in ("iv", "ct", "tag"))
    cipher = key_for(settings, version)
    from cryptography.exceptions import InvalidTag
    try:
        plain = cipher.decrypt(iv, ct + tag, None)
    except (InvalidTag, ValueError) as exc:
        raise EncryptionError(f"InvalidTag: the ciphertext does not match its tag under key "
                              f"version {version} (tampered, or another key) "
                              f"{str(exc)[:100]}".rstrip()) from None
    try:
        return loads(plain)
    except ValueError as exc:
        raise EncryptionError(f"ValueError: the decrypted argument is not JSON ({exc})") \
            from None


# --- hooks --------------------------------------------------------------------------

def _encrypt(job: dict, client, origin: str) -> dict:
    args = job["args"]
    if not job.get("encrypt") or not args or is_marked(args[-1]):
        return job  # nothing to hide, or already sealed (a retry, a revived job)
    version, cipher = _active_key(client.config)
    job["args"] = [*args[:-1], encrypt_value(args[-1], version, cipher)]
    return job


def _around(run, proceed):
    job = run.job
    args = job.get("args")
    if not job.get("encrypt") or not args or not is_marked(args[-1]):
        return proceed()
    sealed = args[-1]
    try:
        secret = decrypt_envelope(sealed, settings_for(run.config))
    except (EncryptionError, ConfigurationError) as exc:
        bury(run, exc)
        raise JobHandled() from exc
    args[-1] = secret
    try:
        return proceed()
    except Exception as exc:
        shown = redacted(exc, secret)
        if shown is exc:
            raise
        raise shown from None  # the original's message held the secret: not chained
    finally:
        args[-1] = sealed  # what failure handling stores is the job as it was fetched


def bury(run, exc: BaseException) -> None:
    """Straight to the dead set, arguments untouched: no retry could decrypt it."""
    job = loads(run.raw)
    job["error_class"] = ERROR_CLASS
    job["error_message"] = f"{ERROR_CLASS}: {error_message(exc)}"
    job["failed_at"] = run.config.job_clock()
    logger.warning("%s jid=%s cannot be decrypted and goes to the dead set: %s",
                   job.get("class"), job.get("jid"), exc)
    send_to_dead(run.connection, run.config, dumps(job))
    statsd.increment(run.config, "jobs.encryption_error", [f"worker:{metric_class(job)}"])
    run_death_handlers(run.config, job, exc)


def redacted(exc: Exception, secret) -> Exception:
    """The job's exception with every piece of the decrypted argument taken out of its
    message, which is stored with the retry and shown in the dashboard."""
    pieces = sorted(_pieces(secret), key=len, reverse=True)
    if not pieces or not any(piece in error_message(exc) for piece in pieces):
        return exc
    exc.args = tuple(_scrub(arg, pieces) if isinstance(arg, str) else arg for arg in exc.args)
    if any(piece in error_message(exc) for piece in pieces):
        # Its message does not come from its args (a custom __str__): replace it whole.
        return EncryptedArgumentError(f"{error_class(exc)} (its message is withheld: it "
                                      f"held part of the job's encrypted argument)")
    return exc


class EncryptedArgumentError(Exception):
    """Stands in for an exception whose message would have shown an encrypted argument."""


def _scrub(text: str, pieces: list[str]) -> str:
    for piece in pieces:
        text = text.replace(piece, PLACEHOLDER)
    return text


def _pieces(value) -> set[str]:
    found = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif item is not None and not isinstance(item, bool):
            text = str(item)
            if len(text) >= _FRAGMENT_MIN:
                found.add(text)
    if not isinstance(value, (str, int, float)) and value is not None:
        found.add(dumps(value).decode())
    return found


HOOKS.add(ClientHook("encrypt", CLIENT_ORDER, _encrypt))
HOOKS.add(JobHook("encrypt", JOB_ORDER, _around))
