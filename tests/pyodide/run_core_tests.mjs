// Run the core's test modules inside Pyodide under Node (tests/test_core_in_pyodide.py calls this).
//
//   node run_core_tests.mjs PYODIDE_DIR WHEEL TESTS_DIR MODULES_JSON
//
// Loads Pyodide from the npm package, unpacks the descent wheel the site ships (the same call
// worker.js makes), writes the stand-ins for pytest and hypothesis (tests/pyodide/shim/), the
// runner (tests/pyodide/runner.py), conftest.py and the chosen test modules into Pyodide's file
// system, runs them, and prints one JSON object: {"python", "passed", "failed", "skipped",
// "errors", "modules"}. Exit status 0 whenever the runner ran; failures are in the JSON.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const [pyodideDir, wheelPath, testsDir, modulesJson] = process.argv.slice(2);
const modules = JSON.parse(modulesJson);
const { loadPyodide } = await import(join(pyodideDir, "pyodide.mjs"));
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/" });
// Node's Buffer is not accepted by unpackArchive: wrap it in a Uint8Array (DESIGN.md).
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");

const HOME = "/home/pyodide";
function mkdirs(path) {
  let cur = "";
  for (const part of path.split("/").filter(Boolean)) {
    cur += "/" + part;
    if (!pyodide.FS.analyzePath(cur).exists) pyodide.FS.mkdir(cur);
  }
}
function copyTree(src, dest) {
  mkdirs(dest);
  for (const name of readdirSync(src)) {
    const s = join(src, name);
    if (statSync(s).isDirectory()) copyTree(s, dest + "/" + name);
    else if (name.endsWith(".py")) pyodide.FS.writeFile(dest + "/" + name, readFileSync(s));
  }
}
copyTree(join(testsDir, "pyodide", "shim"), HOME + "/shim");
mkdirs(HOME + "/tests");
for (const f of ["conftest.py", ...modules.map((m) => m + ".py")]) {
  pyodide.FS.writeFile(HOME + "/tests/" + f, readFileSync(join(testsDir, f)));
}
pyodide.FS.writeFile(HOME + "/shim/_descent_runner.py", readFileSync(join(testsDir, "pyodide", "runner.py")));

pyodide.globals.set("MODULES_JSON", modulesJson);
const out = await pyodide.runPythonAsync(`
import json, sys
sys.path.insert(0, "${HOME}/shim")
import _descent_runner
res = _descent_runner.run("${HOME}/tests", json.loads(MODULES_JSON))
res["python"] = sys.version.split()[0]
res["numpy_loaded"] = "numpy" in sys.modules
json.dumps(res)
`);
process.stdout.write(out);
