"""Importing a registry's member module on first use (start-up: a render imports only the
admission injectors a pod can trigger and the serving engines a container runs;
docs/performance.md)."""
from __future__ import annotations

import sys


def submodule(package: str, name: str):
    """The module `package`.`name`, imported on first use. Through `__import__` (the import
    statement's machinery) rather than importlib.import_module, so that `python -X
    importtime` reports it, as the start-up tests (tests/test_cli.py) read it. Raises
    ImportError (ModuleNotFoundError) when there is no such module."""
    full = f"{package}.{name}"
    found = sys.modules.get(full)
    if found is None:
        __import__(full)
        found = sys.modules[full]
    return found
