// descent: the model worker's network guard, as a module of its own so that llm-worker.js can
// import it before wllama (imports are evaluated in order: this runs before the engine's code).
// The engine needs no code made from text (its header policy has no 'unsafe-eval'): refused here too.
import { guard } from "./guard.js";

guard({ workers: "own-blobs", evals: "refuse" });
