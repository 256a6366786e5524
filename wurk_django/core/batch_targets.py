"""Batch callback targets: what `Batch.on(event, target)` accepts, checked as far as this
process can check it, and how a callback job finds the method to call at run time.

A target is a class (stored by its dotted path), `"pkg.mod.Class"`, `"pkg.mod.Class#method"`
or `"#method"` (a method of the batch's `callback_class`). Without a method the callback
calls `on_<event>(status, options)` on a fresh instance, as Sidekiq Pro does.
"""

import importlib
import inspect

from .errors import CallbackTargetError

EVENTS = ("complete", "success", "death")


def check_event(event) -> str:
    if event not in EVENTS:
        raise CallbackTargetError(f"a batch callback event is one of {', '.join(EVENTS)}; "
                                  f"got {event!r}")
    return event


def target_name(target, event: str, callback_class: str | None = None) -> str:
    """The stored form of a target. Raises CallbackTargetError for one that cannot work;
    a path whose module this process cannot import is accepted (it may exist only in the
    workers), everything else is checked now."""
    if inspect.isclass(target):
        name = f"{target.__module__}.{target.__qualname__}"
        if "<locals>" in target.__qualname__:
            raise CallbackTargetError(f"callback class {name} is defined inside a function: "
                                      "a worker cannot import it; define it at module level")
        _check_method(target, f"on_{event}", name)
        return name
    if not isinstance(target, str):
        raise CallbackTargetError(f"a batch callback target is a class or a string "
                                  f"'pkg.mod.Class[#method]', got {target!r}")
    text = target.strip()
    path, _, method = text.partition("#")
    if method and not method.isidentifier():
        raise CallbackTargetError(f"callback target {target!r}: {method!r} is not a method name")
    if not path:
        if not method:
            raise CallbackTargetError("a batch callback target cannot be empty")
        if not callback_class:
            raise CallbackTargetError(f"callback target {target!r} names a method of the "
                                      "batch's callback_class, but the batch has none; set "
                                      "callback_class= or write 'pkg.mod.Class#method'")
        _check_path(f"{callback_class}#{method}", event)
        return text
    _check_path(text, event)
    return text


def _check_path(text: str, event: str) -> None:
    path, _, method = text.partition("#")
    parts = path.split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        raise CallbackTargetError(f"callback target {text!r} is not a dotted path "
                                  "'pkg.mod.Class' (with an optional '#method')")
    try:
        owner, rest = _import_longest(parts)
    except ModuleNotFoundError:
        return  # not importable here: it may live only in the workers' code
    if hasattr(owner, "__path__") and not hasattr(owner, rest[0]):
        return  # a module of that package missing here (the same reason)
    cls = _walk(owner, rest, text)
    _check_method(cls, method or f"on_{event}", text)


def _check_method(cls, method: str, name: str) -> None:
    if not callable(getattr(cls, method, None)):
        raise CallbackTargetError(f"callback class {name} has no method {method}(status, "
                                  "options)")


def resolve(target: str, event: str, callback_class: str | None = None):
    """The bound method a callback job calls, on a fresh instance of the target class;
    CallbackTargetError when it cannot be found (the job then goes to the dead set)."""
    text = target
    if text.startswith("#"):
        if not callback_class:
            raise CallbackTargetError(f"callback target {target!r} needs the batch's "
                                      "callback_class, and the batch has none")
        text = f"{callback_class}{text}"
    path, _, method = text.partition("#")
    parts = path.split(".")
    if len(parts) < 2:
        raise CallbackTargetError(f"callback target {text!r} is not a dotted path")
    try:
        owner, rest = _import_longest(parts)
    except Exception as exc:  # a module that is missing or fails to import
        raise CallbackTargetError(f"callback target {text!r} cannot be imported: "
                                  f"{type(exc).__name__}: {exc}") from exc
    cls = _walk(owner, rest, text)
    method = method or f"on_{event}"
    try:
        instance = cls()
    except TypeError as exc:
        raise CallbackTargetError(f"callback class {path} cannot be built without "
                                  f"arguments: {exc}") from exc
    bound = getattr(instance, method, None)
    if not callable(bound):
        raise CallbackTargetError(f"callback class {path} has no method {method}(status, "
                                  "options)")
    return bound


def _import_longest(parts: list[str]):
    """Import the longest module prefix of `parts`; (module, remaining names). Raises
    ModuleNotFoundError when not even the first part is a module; a module that exists
    but fails to import raises its own error."""
    for cut in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:cut])
        try:
            return importlib.import_module(name), parts[cut:]
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                continue
            raise
    raise ModuleNotFoundError(f"no module {parts[0]!r}", name=parts[0])


def _walk(owner, names: list[str], text: str):
    found = owner
    for name in names:
        parent, found = found, getattr(found, name, None)
        if found is None and hasattr(parent, "__path__"):
            raise CallbackTargetError(f"callback target {text!r} cannot be imported: no "
                                      f"module {parent.__name__}.{name}")
        if found is None:
            raise CallbackTargetError(f"callback target {text!r}: {name!r} not found")
    if not inspect.isclass(found):
        raise CallbackTargetError(f"callback target {text!r} is not a class")
    return found
