// Run pytest inside Pyodide under Node on the core's test modules (tests/test_core_in_pyodide.py calls this).
//
//   node run_core_tests.mjs PYODIDE_DIR SPEC_JSON_FILE
//
// The spec: {"wheels": [paths], "files": {path in Pyodide: path here}, "root": dir in Pyodide,
// "runner": dir in Pyodide holding runner.py, "tests": [test files, relative to root],
// "args": [pytest arguments], "skip": {test id: reason}, "env": {name: value} (optional, set in Python's os.environ)}. Loads Pyodide from the npm package, unpacks every wheel (the descent
// wheel the site ships, the same call worker.js makes, then pytest, hypothesis and their
// dependencies) into site-packages, writes the files into Pyodide's file system, runs runner.run() from the root and
// prints its JSON summary on stdout, plus "python" and "numpy_loaded". Python's own stdout and
// stderr (pytest's report) go to stderr. Exit status 0 whenever the runner ran.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [pyodideDir, specFile] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specFile, "utf8"));
const { loadPyodide } = await import(join(pyodideDir, "pyodide.mjs"));
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/" });
const toStderr = { write: (bytes) => (process.stderr.write(bytes), bytes.length) };
pyodide.setStdout(toStderr);
pyodide.setStderr(toStderr);
// Into site-packages, not the working directory (unpackArchive's default): the tests run from
// another directory.
const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
for (const wheel of spec.wheels) {
  // Node's Buffer is not accepted by unpackArchive: wrap it in a Uint8Array (DESIGN.md).
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", { extractDir: sitePackages });
}

function mkdirs(path) {
  let cur = "";
  for (const part of path.split("/").filter(Boolean)) {
    cur += "/" + part;
    if (!pyodide.FS.analyzePath(cur).exists) pyodide.FS.mkdir(cur);
  }
}
for (const [dest, src] of Object.entries(spec.files)) {
  mkdirs(dest.slice(0, dest.lastIndexOf("/")));
  pyodide.FS.writeFile(dest, readFileSync(src));
}

pyodide.globals.set("SPEC", JSON.stringify(spec));
const out = await pyodide.runPythonAsync(`
import json, os, sys
spec = json.loads(SPEC)
os.chdir(spec["root"])
os.environ.update(spec.get("env", {}))
sys.path.insert(0, spec["runner"])
import runner

# Wall-clock deadlines measure the machine, not the code: Pyodide under Node runs the same
# examples several times slower than CPython (a test's own @settings still wins).
res = runner.run(spec["tests"], spec["args"], hypothesis_settings={"deadline": None}, skip=spec["skip"])
res["python"] = sys.version.split()[0]
res["numpy_loaded"] = "numpy" in sys.modules
json.dumps(res)
`);
process.stdout.write(out);
