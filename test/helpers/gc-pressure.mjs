// Preloaded with `node --expose-gc --import <this file>`: a full garbage
// collection every few milliseconds, so that V8 finalises native objects (the
// SQLite driver's statements) while the process works and at its exit, as it
// does over hours in a long-running server. Worker processes inherit it.
if (typeof globalThis.gc !== 'function') throw new Error('gc-pressure.mjs needs node --expose-gc');
setInterval(() => globalThis.gc(), 5).unref();
