"""The batch Lua scripts and how they are sent: by SHA on a pooled socket, one round trip
each (loaded again when Redis has lost them), or several inside one MULTI/EXEC that loads
them first, so a transaction never half-applies for want of a script."""

import hashlib

from . import keys
from .errors import RedisCommandError, ScriptMissingError
from .redis import lua_source

SCRIPTS = ("batch_create", "batch_hold", "batch_release", "batch_push", "batch_schedule",
           "batch_ack_success", "batch_ack_failed", "batch_ack_complete", "batch_fire",
           "batch_death", "batch_clear_death", "batch_set", "batch_append_callback",
           "batch_remove_jobs")
_SOURCES = {name: lua_source(name) for name in SCRIPTS}
_SHAS = {name: hashlib.sha1(source.encode()).hexdigest() for name, source in _SOURCES.items()}


def script_command(name: str, script_keys, args) -> tuple:
    """The EVALSHA command for a batch script (to send alone or inside `transaction`)."""
    return ("EVALSHA", _SHAS[name], len(script_keys), *script_keys, *args)


def call(connection, name: str, script_keys, args, *, read: bool = False):
    """Run one batch script in one round trip; on NOSCRIPT load it and run it again (a
    refused EVALSHA ran nothing, so sending it twice is safe)."""
    command = script_command(name, script_keys, args)
    send = connection.read if read else connection.write
    try:
        return send(connection.execute_batch, [command])[0]
    except ScriptMissingError:
        return send(connection.execute_batch, [("SCRIPT", "LOAD", _SOURCES[name]), command])[1]


def transaction(connection, commands: list[tuple], scripts=()) -> list:
    """Run commands in one MULTI/EXEC, in one round trip; the scripts they use are loaded
    just before, in the same round trip. Returns the EXEC replies; an error reply inside
    them (which Redis does not roll back) is raised."""
    loads = [("SCRIPT", "LOAD", _SOURCES[name]) for name in dict.fromkeys(scripts)]
    batch = [*loads, ("MULTI",), *commands, ("EXEC",)]
    replies = connection.write(connection.execute_batch, batch)
    results = replies[-1]
    for reply in results:
        if isinstance(reply, Exception):
            raise RedisCommandError(f"a batch command failed inside its transaction: {reply}",
                                    reply=str(reply))
    return results


def batch_keys(bid: str, *parts: str) -> list[str]:
    """`b-<bid>` followed by the named parts (`jids`, `failed`...)."""
    return [keys.batch(bid), *(keys.batch_part(bid, part) for part in parts)]
