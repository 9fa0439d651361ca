"""Build hook for govern's optional native digest core (native/: Rust, via setuptools-rust).

Everything else about the package is declared in setup.cfg. The extension is optional:
without cargo, `pip install .` still succeeds and `govern digest` uses its pure-Python
engine. It is always built in release mode: a debug build is about 20 times slower.
"""

from setuptools import setup
from setuptools_rust import Binding, RustExtension

setup(
    rust_extensions=[
        RustExtension(
            "govern._native",
            path="native/Cargo.toml",
            binding=Binding.PyO3,
            features=["python"],
            optional=True,
            debug=False,
        )
    ],
)
