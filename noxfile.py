"""Nox sessions: one per package, plus tests, conformance, sanitize, lint, bench, demo, docs,
distributed.

Every session installs the packages it needs from this checkout in one pip
call (the local siblings it depends on included), so it tests what a user
would install. No session pins a Python version: nox uses the interpreter it
runs under.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

# package key -> (folder, local packages it needs, in dependency order)
PACKAGES = {
    "ndarray": ("packages/ndarray", []),
    "autograd": ("packages/autograd", ["ndarray"]),
    "nn": ("packages/nn", ["ndarray", "autograd"]),
    "backend_cpu": ("packages/backends-cpu", ["ndarray"]),
    "backend_cuda": ("packages/backends-cuda", ["ndarray"]),
}


def built(key: str) -> bool:
    """Whether a package has code yet (an unbuilt package has only its README/pyproject)."""
    folder = ROOT / PACKAGES[key][0]
    return (folder / "src").is_dir() and (folder / "tests").is_dir()


def cuda_buildable() -> bool:
    return shutil.which("nvcc") is not None


def install_args(keys: list[str], extras: str | None = "test") -> list[str]:
    """pip arguments installing ``keys`` (with their local dependencies) in one call."""
    wanted: list[str] = []
    for key in keys:
        for dep in PACKAGES[key][1] + [key]:
            if dep not in wanted and built(dep):
                wanted.append(dep)
    suffix = f"[{extras}]" if extras else ""
    return [f"./{PACKAGES[k][0]}{suffix}" for k in wanted]


def run_package_tests(session: nox.Session, key: str, extra_keys: list[str]) -> None:
    if not built(key):
        session.log(f"{PACKAGES[key][0]} has no code yet (see its README); nothing to test.")
        return
    session.install(*install_args(extra_keys + [key]))
    session.run("pytest", f"{PACKAGES[key][0]}/tests", *session.posargs)


def run_conformance(session: nox.Session, args: list[str]) -> None:
    """Run the kit against every backend the registry reports available."""
    listing = session.run(
        "python", "-c",
        "from lamina.ndarray import list_backends as l; "
        "print(' '.join(b.name for b in l() if b.status == 'available'))",
        silent=True)
    for name in str(listing).split():
        session.run("python", "-m", "lamina.ndarray.conformance", name, *args)


@nox.session
def ndarray(session: nox.Session) -> None:
    """lamina-ndarray: NDArray, the numpy backend, the registry and the conformance kit."""
    run_package_tests(session, "ndarray", [])
    session.run("python", "-m", "lamina.ndarray.conformance", "numpy", "-q")


@nox.session
def autograd(session: nox.Session) -> None:
    """lamina-autograd: Tensor and reverse-mode autodiff, checked against PyTorch."""
    run_package_tests(session, "autograd", [])


@nox.session
def nn(session: nox.Session) -> None:
    """lamina-nn: modules, optimizers, data, models, lamina-train."""
    run_package_tests(session, "nn", [])


@nox.session
def backend_cpu(session: nox.Session) -> None:
    """lamina-backend-cpu: builds the C++ extension and runs its tests and the kit."""
    run_package_tests(session, "backend_cpu", [])
    if built("backend_cpu"):
        session.run("python", "-m", "lamina.ndarray.conformance", "cpu", "-q")


@nox.session
def backend_cuda(session: nox.Session) -> None:
    """lamina-backend-cuda: builds with nvcc; GPU tests skip without a GPU."""
    if not cuda_buildable():
        session.skip("nvcc was not found on PATH: the CUDA backend cannot be built here")
    run_package_tests(session, "backend_cuda", [])


@nox.session
def distributed(session: nox.Session) -> None:
    """lamina.distributed and DDP with 2, 3 and 4 MPI processes (mpi4py + the MPICH wheel).

    Installs lamina-nn[distributed] (MPI from PyPI, no system packages) and
    runs the multi-process tests; every run of ``mpiexec`` is bounded in time.
    Tensors live on the numpy device here, so no compiled backend is built.
    """
    args = install_args(["nn"])
    args[-1] = f"./{PACKAGES['nn'][0]}[test,distributed]"
    session.install(*args)
    session.run("pytest", "-q", f"{PACKAGES['nn'][0]}/tests/test_distributed.py",
                f"{PACKAGES['autograd'][0]}/tests/test_hooks.py", *session.posargs,
                env={"LAMINA_DEVICE": "numpy"})


@nox.session
def bench_distributed(session: nox.Session) -> None:
    """Data-parallel throughput vs PyTorch DDP (gloo); writes benchmarks/results/distributed.*."""
    args = install_args(["nn", "backend_cpu"], extras=None)
    args[args.index(f"./{PACKAGES['nn'][0]}")] = f"./{PACKAGES['nn'][0]}[distributed]"
    session.install(*args, "torch==2.13.0")
    session.run("python", "benchmarks/bench_distributed.py", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Every package in one environment, then the conformance kit on every backend."""
    keys = [k for k in PACKAGES if built(k) and (k != "backend_cuda" or cuda_buildable())]
    session.install(*install_args(keys))
    # one pytest run per package: each package's tests/ is its own rootdir-level
    # suite (their conftest modules share a name and must not meet in one process)
    for key in keys:
        session.run("pytest", f"{PACKAGES[key][0]}/tests", *session.posargs)
    run_conformance(session, ["-q"])


@nox.session
def conformance(session: nox.Session) -> None:
    """The conformance kit against every available backend."""
    keys = ["ndarray"] + [k for k in ("backend_cpu", "backend_cuda")
                          if built(k) and (k != "backend_cuda" or cuda_buildable())]
    session.install(*install_args(keys))
    session.run("python", "-m", "lamina.ndarray", external=False)
    run_conformance(session, session.posargs)


@nox.session
def sanitize(session: nox.Session) -> None:
    """The CPU backend built with ASan + UBSan, under the conformance kit and its own tests.

    The instrumented build goes to its own build directory (it must not replace
    an everyday build), and ``build_info()`` proves the instrumented one is the
    one imported. The sanitizer runtimes are preloaded into the test processes
    only (the interpreter itself is not instrumented); the block cache is off so
    a use-after-free is reported rather than hidden by reuse.
    """
    if not built("backend_cpu"):
        session.skip("packages/backends-cpu has no code yet")
    session.install("scikit-build-core>=0.9", "pybind11>=2.12", *install_args(["ndarray"]),
                    "hypothesis>=6")
    session.install("--no-build-isolation", "--no-deps", "-Cbuild-dir=build/sanitize",
                    f"./{PACKAGES['backend_cpu'][0]}", env={"LAMINA_SANITIZE": "ON"})
    runtimes = [session.run("gcc", f"-print-file-name={lib}", external=True, silent=True)
                for lib in ("libasan.so", "libubsan.so")]
    env = {"LD_PRELOAD": " ".join(str(r).strip() for r in runtimes),
           "ASAN_OPTIONS": "detect_leaks=0",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
           "LAMINA_CACHE_BYTES": "0"}
    session.run("python", "-c", "import lamina_backend_cpu as m; "
                "assert m.backend.build_info()['sanitize'], 'not the instrumented build'",
                env=env)
    session.run("python", "-m", "lamina.ndarray.conformance", "cpu", "-q", env=env)
    session.run("pytest", "-q", f"{PACKAGES['backend_cpu'][0]}/tests", *session.posargs,
                env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the tree, mypy over every package's src/."""
    session.install("ruff==0.17.6", "mypy==2.4.1", "numpy")  # pinned: new rules fail CI otherwise
    session.run("ruff", "check", ".")
    srcs = [f"{PACKAGES[k][0]}/src" for k in PACKAGES if built(k)]
    session.run("mypy", *srcs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks side by side with numpy and PyTorch; writes benchmarks/results/."""
    keys = [k for k in PACKAGES if built(k) and k != "backend_cuda"]
    session.install(*install_args(keys), "torch==2.13.0")
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """Install Lamina and train on the MNIST subset the package ships."""
    keys = [k for k in ("ndarray", "autograd", "nn", "backend_cpu") if built(k)]
    session.install(*install_args(keys, extras=None))
    session.run("lamina-train", "mnist", "--epochs", "3", *session.posargs)


DOCS_REQUIREMENTS = ["mkdocs==1.6.1", "mkdocs-material==9.8.1", "mkdocstrings==1.0.8",
                     "mkdocstrings-python==2.0.11", "pymdown-extensions==13.1", "pytest>=7"]


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, built with warnings as errors, and every code block in it.

    Installs the pure packages and the example plugin (not the compiled
    backends: the pages' code runs on the numpy device and the API reference
    is read from source), builds site/ with ``mkdocs build --strict``, runs
    the conformance kit against the example plugin, then docs/test_docs.py.
    """
    session.install(*install_args(["nn"], extras=None), "./examples/lamina-backend-tiny",
                    *DOCS_REQUIREMENTS)
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})
    session.run("python", "-m", "lamina.ndarray.conformance", "tiny", "-q")
    session.run("pytest", "-q", "docs", *session.posargs, env={"LAMINA_DEVICE": "numpy"})
