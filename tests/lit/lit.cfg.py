# lit configuration for tritium's FileCheck tests: each .test file runs tritiumc and checks one
# stage of the pipeline; each .tir file is a hand-written kernel run through tritium-opt (one
# pass or one lowering family per file). tests/CMakeLists.txt passes the tools' paths as --param.
import os

import lit.formats

config.name = "tritium"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test", ".tir"]
config.excludes = ["Inputs"]  # kernels and scripts the tests read, not tests themselves
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get("exec_root", config.test_source_root)

tritiumc = lit_config.params.get("tritiumc")
filecheck = lit_config.params.get("filecheck")
if not tritiumc or not filecheck:
    lit_config.fatal("pass --param=tritiumc=PATH and --param=filecheck=PATH")

# tritiumc, FileCheck and not (beside FileCheck) on the PATH; no cache or dumps of the user's.
path = [os.path.dirname(tritiumc), os.path.dirname(filecheck), config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path + [os.environ.get("PATH", "")])
config.environment["TRITIUM_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")
config.environment.pop("TRITIUM_DUMP_DIR", None)

tritium_opt = lit_config.params.get("tritium_opt")
if not tritium_opt:
    lit_config.fatal("pass --param=tritium_opt=PATH")
config.substitutions.append(("%tritium-opt", tritium_opt))

ptxas = lit_config.params.get("ptxas", "")
if ptxas and os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
