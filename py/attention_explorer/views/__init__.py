"""Pure renderers: (state, computed trace) -> SVG/HTML markup.

Views draw the trace; they never recompute mathematics. All escaping goes
through views.markup.
"""


def __getattr__(name: str):
    """views.<module> imports that view module when first named (PEP 562: Python calls this only for a name
    the package does not have yet; once imported, the module is the package's attribute). page.py names
    the views of the panels below the first screen this way, so that the worker's start-up imports none of
    them (page.LATER)."""
    import importlib

    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise  # a module that view imports is missing: that error, not this one
        raise AttributeError(f"module {__name__!r} has no view {name!r}") from None
