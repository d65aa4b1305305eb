"""Each module imported from a zip is read once, not twice: installed by the worker at start-up.

Python 3.12's zipimporter finds a module's code twice for every import: find_spec asks get_filename
for the module's file name, which it works out by reading the member from the zip, decompressing it
and unmarshalling its code (`zipimport._get_module_code`), and then exec_module asks get_code, which
does all of that again. The worker imports ~200 modules from zips at start-up (the standard library's
and ours, both bytecode), in WebAssembly that has not yet been optimised, so the second read was a
measurable part of its start-up. install() keeps the code get_filename found until get_code asks
for it: the same code, file name and fallbacks (a .pyc that fails its checks still falls back to the
.py, and __file__ says so), each read once. A module whose file name was asked for but which was
never executed keeps its code here; a zip's members do not change while the worker runs.

    install() -> True once installed (False: this Python's zipimport lacks what it relies on)
    uninstall()   the zipimporter as it was (tests)

Only the worker calls install() (worker_main.load_numpy), before NumPy and our modules are imported.
"""

from __future__ import annotations

import zipimport

_found: dict[tuple[str, str, str], object] = {}  # (archive, prefix, module name) -> its code object
_original: dict[str, object] = {}  # the zipimporter methods replaced, while installed


def install() -> bool:
    if _original:
        return True
    find_code = getattr(zipimport, "_get_module_code", None)  # -> (code, is package, file name)
    if find_code is None:
        return False
    cls = zipimport.zipimporter
    get_code = cls.get_code

    def get_filename(self, fullname):
        code, _is_package, path = find_code(self, fullname)
        _found[(self.archive, self.prefix, fullname)] = code
        return path

    def get_code_once(self, fullname):
        code = _found.pop((self.archive, self.prefix, fullname), None)
        return get_code(self, fullname) if code is None else code

    _original.update(get_filename=cls.get_filename, get_code=get_code)
    cls.get_filename, cls.get_code = get_filename, get_code_once
    return True


def uninstall() -> None:
    for name, method in _original.items():
        setattr(zipimport.zipimporter, name, method)
    _original.clear()
    _found.clear()
