"""gdio's exception type."""

from __future__ import annotations


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
        return (
            type(self),
            (self.errno, self.message, self.filename, self.offset, self.length, self.kind,
             self.driver_code, self.strerror),
        )


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
