// The ceiling the service is measured against: Node's own HTTP server doing the
// least a plant store must do. It reads the body, parses the JSON, compares the
// bearer token to a constant, and answers 200 with the plant: no validation, no
// storage, no logging.
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 8090);
const expected = `Bearer ${process.env.BASELINE_TOKEN ?? 'ps_baseline'}`;

createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.headers.authorization !== expected) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":401,"message":"unauthorized"}');
      return;
    }
    const plant = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify(plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag });
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  });
}).listen(port, '127.0.0.1', () => console.log(`baseline listening on ${port}`));
