# A compiled file loaded by name: a sourceless .pyc, an extension module, a .pyc copied to scratch.


def pyc_by_path():
    (path,) = glob.glob(os.path.join(SITE, "yaml", "__pycache__", "error.cpython-*.pyc"))
    importlib.machinery.SourcelessFileLoader("yaml_error", path).load_module()


def extension_by_path():
    (path,) = glob.glob(os.path.join(SITE, "yaml", "_yaml.cpython-*.so"))
    loader = importlib.machinery.ExtensionFileLoader("yaml._yaml", path)
    spec = importlib.util.spec_from_file_location("yaml._yaml", path, loader=loader)
    importlib.util.module_from_spec(spec)


def pyc_copied():
    import shutil

    (path,) = glob.glob(os.path.join(SITE, "pydantic", "__pycache__", "version.cpython-*.pyc"))
    shutil.copyfile(path, "pydantic_version.pyc")  # the scratch folder, where the worker runs
    sys.path.insert(0, os.getcwd())
    importlib.import_module("pydantic_version")


def ctypes_extension():
    import ctypes

    (path,) = glob.glob(os.path.join(SITE, "yaml", "_yaml.cpython-*.so"))
    ctypes.CDLL(path)


attempt("pyc by path", pyc_by_path)
attempt("extension by path", extension_by_path)
attempt("pyc copied", pyc_copied)
attempt("extension through ctypes", ctypes_extension)
