# lit configuration for HetPar's tests (lit and FileCheck from Debian's llvm-22-tools).
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "HetPar"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]

config.excludes = ["hetpar-profile.test.py", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "tools", "unittests", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hetpar_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMPDIR", "PATH"])
llvm_config.use_default_substitutions()

config.substitutions.append(("%testdata", config.onnx_testdata_dir))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%generator", config.cmake_generator))
config.substitutions.append(("%cxx", config.cxx_compiler))
config.substitutions.append(("%models", os.path.join(config.hetpar_src_root, "examples", "models")))
config.substitutions.append(("%srcroot", config.hetpar_src_root))
config.substitutions.append(("%builddir", config.hetpar_obj_root))
# Debian's Python (install-deps.sh gives it numpy and onnx), not whatever python3
# comes first on PATH.
config.substitutions.append(("%python", "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"))
# The hand-written fake program of the runtime's tests (runtime/test/FakeProgram.cpp).
config.substitutions.append(("%fake_program", os.path.join(config.hetpar_lib_dir, "libhetpar_fake_program.so")))
config.substitutions.append(("%fake_train_big", os.path.join(config.hetpar_lib_dir, "libhetpar_fake_train_big.so")))
config.substitutions.append(("%fake_train", os.path.join(config.hetpar_lib_dir, "libhetpar_fake_train.so")))
config.substitutions.append(("%expect-exit", "bash " + os.path.join(config.hetpar_src_root, "test", "lib", "expect-exit.sh")))

tool_dirs = [config.hetpar_tools_dir, config.llvm_tools_dir]
tools = ["hetpar-opt", "hetpar-translate", "hetpar-compile", "hetpar-import-suite", "HetParUnitTests", "hetpar-cluster", "hetpar-profile", "HetParRuntimeTests", "hetpar-run", "HetParCollectivesTest", "HetParDeviceKernelsTest"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.hetpar_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

if os.path.isdir(config.onnx_testdata_dir):
    config.available_features.add("onnx-testdata")
if config.nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", config.nvcc))
# libFuzzer (bench/fuzz/run.sh): Debian's clang-22 with its runtime.
import glob, shutil
if shutil.which("clang++-22") and glob.glob("/usr/lib/llvm-22/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"):
    config.available_features.add("libfuzzer")

# Generated CPU programs link OpenBLAS's OpenMP build (CMakeLists.txt).
if getattr(config, "openblas_lib_dir", ""):
    config.available_features.add("openblas-openmp")
    config.substitutions.append(("%openblas_lib_dir", config.openblas_lib_dir))

# A CPU without AVX-512-FP16 (test/Codegen/cpu-arch.test builds for a
# Sapphire Rapids and checks that the program refuses to start here).
try:
    with open("/proc/cpuinfo") as f:
        cpu_flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    cpu_flags = []
if cpu_flags and "avx512_fp16" not in cpu_flags:
    config.available_features.add("cpu-lacks-avx512fp16")

# User and mount namespaces (unshare -rm): the file-system fault tests mount
# read-only and full tmpfs file systems there without privileges.
import subprocess
if shutil.which("unshare") and subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0:
    config.available_features.add("unshare")

# Debian's python3-torch and python3-torchvision (install-deps.sh): the
# real-export tests (test/E2E/real-exports.test) export their models with them.
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
if subprocess.run([python, "-c", "import torch, torchvision"], capture_output=True).returncode == 0:
    config.available_features.add("torch")

# The sanitizer build (HETPAR_SANITIZE): Open MPI's own leaks are suppressed
# (test/lsan.supp), its plugins stay loaded so that the leak reports can name
# them, and stacks are unwound fully (Open MPI has no frame pointers).
#
# Full unwinding records every allocation's stack with the slow unwinder: the
# GoogleTest binaries, which allocate most and start no MPI, ran for over an
# hour of CPU that way instead of 2 minutes. Their RUN lines start with
# %fast-unwind, which keeps frame-pointer stacks for them (empty outside the
# sanitizer build).
if getattr(config, "hetpar_sanitize", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitize")
    supp = os.path.join(config.hetpar_src_root, "test", "lsan.supp")
    lsan = [os.environ.get("LSAN_OPTIONS", ""), "suppressions=" + supp,
            "print_suppressions=0"]
    config.environment["LSAN_OPTIONS"] = ":".join(
        filter(None, lsan + ["fast_unwind_on_malloc=0"]))
    config.environment["OMPI_MCA_mca_base_component_disable_dlclose"] = "1"
    config.substitutions.append(
        ("%fast-unwind", "env LSAN_OPTIONS=" + ":".join(filter(None, lsan))))
else:
    config.substitutions.append(("%fast-unwind", ""))

# Waiting OpenMP threads sleep instead of spinning: lit runs tests side by
# side on few cores, where spinning threads of one program starve another's
# (a training test took 5 minutes instead of 40 s under load).
config.environment["OMP_WAIT_POLICY"] = "PASSIVE"
