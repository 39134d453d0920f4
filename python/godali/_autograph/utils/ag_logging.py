"""DALI's nvidia.dali._autograph.utils.ag_logging: the conversion's verbosity switch.

godali's conditional rewrite logs nothing; the verbosity is kept so that code setting or
reading it (DALI's debugging advice: ag_logging.set_verbosity(10, True)) runs unchanged.
"""

import logging as _logging
import sys as _sys

_verbosity = 0
_echo = False
_log = _logging.getLogger("godali.autograph")


def set_verbosity(level, alsologtostdout=False):
    """Sets the verbosity (DALI's set_verbosity); messages at or below it are logged."""
    global _verbosity, _echo
    _verbosity = int(level)
    _echo = bool(alsologtostdout)


def get_verbosity():
    return _verbosity


def has_verbosity(level):
    return _verbosity >= level


def log(level, msg, *args, **kwargs):
    """Logs msg % args when the verbosity is at least level."""
    if has_verbosity(level):
        text = msg % args if args else msg
        _log.info(text)
        if _echo:
            print(text, file=_sys.stdout)


def error(level, msg, *args, **kwargs):
    if has_verbosity(level):
        _log.error(msg % args if args else msg)


def warning(msg, *args, **kwargs):
    _log.warning(msg % args if args else msg)


def trace(*args):
    if _echo:
        print(*args, file=_sys.stdout)
