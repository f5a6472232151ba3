// better-sqlite3 12, the last line that runs on Node.js 20: this package exists
// so that npm installs it on Node.js 20 only (its engines field makes npm skip
// it, an optional dependency, on every other line). The service loads it
// through src/store/sqlite/driver.ts.
module.exports = require('better-sqlite3');
