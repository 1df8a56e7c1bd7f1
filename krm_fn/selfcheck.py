"""`krm-fn selfcheck`: can this installation run the function? For images and CI steps that
must fail at build or setup time, not at the first render (public case C20: "missing Python
or modules -> immediate error naming what is missing, exit 1").

Imports every module a render can need, including the ones krm-fn imports lazily
(ruamel.yaml for the fallback writer), so a partial
install fails here instead of in the middle of an Argo CD sync.
"""
from __future__ import annotations

import importlib
import platform
import sys

# (module, what to install when it is missing). The krm_fn modules pull in the rules, the
# node plan and every output format.
REQUIRED = (
    ("click", "click (pip install krm-fn pulls it in)"),
    ("yaml", "PyYAML"),
    ("ruamel.yaml", "ruamel.yaml"),
    ("krm_fn.cli", "krm-fn"),
    ("krm_fn.cli.render", "krm-fn"),
    ("krm_fn.cli.commands", "krm-fn"),
    ("krm_fn.pipeline", "krm-fn"),
    ("krm_fn.resourcelist", "krm-fn"),
)


def problems(required: tuple = REQUIRED) -> list[str]:
    """One message per module of `required` ((module, package) pairs) that cannot be
    imported, naming the module, the import error and the package to install; [] when all
    import. Never raises for an import failure (any exception while importing counts)."""
    out = []
    for module, package in required:
        try:
            importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - ImportError, or a broken module raising anything
            out.append(f"cannot import {module} ({type(e).__name__}: {e}); install {package} "
                       f"into the Python that runs krm-fn ({sys.executable})")
    return out


def summary() -> str:
    """One line describing the working installation: version, interpreter, libyaml."""
    from krm_fn import __version__
    try:
        from yaml.cyaml import CParser  # noqa: F401
        libyaml = "libyaml"
    except ImportError:
        libyaml = "pure-Python YAML parser (libyaml missing: same output, slower)"
    return (f"krm-fn {__version__} ok: Python {platform.python_version()} at "
            f"{sys.executable}, {libyaml}")
