# pkgutil: its importer for the packages' folder, a name resolved through its frames, a walk of the folder.
import pkgutil


def get_importer():
    spec = pkgutil.get_importer(SITE).find_spec("hypothesis")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def resolve_name():
    # imported from pkgutil's frame, not the student's: the finder looks at who asked
    pkgutil.resolve_name("yaml:safe_load")("a: 1")


def iter_modules():
    found = {m.name: m for m in pkgutil.iter_modules([SITE])}
    spec = found["matplotlib"].module_finder.find_spec("matplotlib")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


attempt("pkgutil.get_importer", get_importer)
attempt("pkgutil.resolve_name", resolve_name)
attempt("pkgutil.iter_modules", iter_modules)
