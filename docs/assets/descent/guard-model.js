// descent: the model worker's network guard, as a module of its own so that llm-worker.js can
// import it before wllama (imports are evaluated in order: this runs before the engine's code).
import { guard } from "./guard.js";

guard({ workers: "own-blobs" });
