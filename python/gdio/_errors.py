"""gdio's exception type."""

from __future__ import annotations

import errno as errno_


class GdioError(OSError, RuntimeError):
    """An I/O or setup error from gdio.

    A subclass of ``OSError`` and of ``RuntimeError`` (what KvikIO raises for its I/O errors,
    so ``except RuntimeError`` written for KvikIO still catches them): ``errno`` is the operating-system error number (``None`` when
    the failure was not a system call), ``filename`` the file. gdio adds ``offset`` and
    ``length`` (the file range of the failed I/O), ``kind`` (gdio's ``ErrorKind`` name, such
    as ``"NotFound"`` or ``"InvalidInput"``), ``driver_code`` (the GPU driver's result code)
    and ``message`` (gdio's full message, which ``str()`` returns).
    """

    __module__ = "gdio"

    def __init__(
        self,
        errno: int | None,
        message: str,
        filename: str | None = None,
        offset: int | None = None,
        length: int | None = None,
        kind: str | None = None,
        driver_code: int | None = None,
        reason: str | None = None,
    ) -> None:
        if filename is not None:
            super().__init__(errno, reason or message, filename)
        else:
            super().__init__(errno, reason or message)
        self.message = message
        self.offset = offset
        self.length = length
        self.kind = kind
        self.driver_code = driver_code

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        args = (self.errno, self.message, self.filename, self.offset, self.length, self.kind,
                self.driver_code, self.strerror)
        # The errno-specific classes are made at run time: rebuild them the same way.
        return (from_native if type(self) in _CLASSES.values() else type(self), args)


class ConfigValueError(GdioError, ValueError):
    """A configuration value gdio refuses (out of range, wrong type): a ``GdioError`` and a
    ``ValueError`` (what KvikIO's ``defaults.set`` raises)."""

    __module__ = "gdio"


class UnknownKeyError(GdioError, KeyError):
    """A configuration key gdio does not have: a ``GdioError`` and a ``KeyError`` (what
    KvikIO's ``defaults.get``/``set`` raise)."""

    __module__ = "gdio"


class ConfigTypeError(ConfigValueError, TypeError):
    """A configuration value of the wrong type (a string for a number, a number for a list):
    a ``ConfigValueError`` and a ``TypeError`` (what KvikIO's ``defaults.set`` raises then)."""

    __module__ = "gdio"


class ConfigOverflowError(ConfigValueError, OverflowError):
    """A negative number for a configuration key (every gdio number is at least 0): a
    ``ConfigValueError`` and an ``OverflowError`` (what KvikIO's ``defaults.set`` raises
    then)."""

    __module__ = "gdio"


class SafetensorError(Exception):
    """The ``safetensors`` package's ``SafetensorError`` (``gdio.safetensors.SafetensorError``):
    a malformed file, a closed ``safe_open``, a bad ``TensorSpec``. gdio's own errors for a
    malformed file are ``GdioError`` s that are also this, so code written for the package
    (``except SafetensorError``) catches them."""

    __module__ = "gdio.safetensors"


# errno -> the built-in OSError subclass Python itself raises for it (as ``OSError(errno, ...)``
# picks), so ``except FileNotFoundError`` around gdio's calls catches gdio's errors too.
_OS_SUBCLASS = {
    errno_.ENOENT: FileNotFoundError,
    errno_.EEXIST: FileExistsError,
    errno_.EISDIR: IsADirectoryError,
    errno_.ENOTDIR: NotADirectoryError,
    errno_.EACCES: PermissionError,
    errno_.EPERM: PermissionError,
    errno_.EINTR: InterruptedError,
    errno_.ETIMEDOUT: TimeoutError,
    errno_.ECONNREFUSED: ConnectionRefusedError,
    errno_.ECONNRESET: ConnectionResetError,
}

_CLASSES: dict[tuple[type, ...], type] = {}


def _class(bases: tuple[type, ...]) -> type:
    """``GdioError`` with the extra ``bases`` mixed in (one class per combination)."""
    if not bases:
        return GdioError
    cls = _CLASSES.get(bases)
    if cls is None:
        name = "Gdio" + "".join(b.__name__ for b in bases)
        cls = type(name, (GdioError, *bases), {"__module__": "gdio", "__doc__": GdioError.__doc__})
        _CLASSES[bases] = cls
    return cls


def from_native(
    errno: int | None,
    message: str,
    filename: str | None = None,
    offset: int | None = None,
    length: int | None = None,
    kind: str | None = None,
    driver_code: int | None = None,
    reason: str | None = None,
) -> GdioError:
    """The exception for an error of gdio's native module: a :class:`GdioError`, which is also
    the built-in ``OSError`` subclass of its errno (``FileNotFoundError`` for ``ENOENT``, ...)
    and, for a malformed safetensors file, :class:`SafetensorError`."""
    bases: tuple[type, ...] = ()
    if errno in _OS_SUBCLASS:
        bases += (_OS_SUBCLASS[errno],)
    if "malformed safetensors file" in message:
        bases += (SafetensorError,)
    return _class(bases)(errno, message, filename, offset, length, kind, driver_code, reason)
