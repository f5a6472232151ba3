// node bench/otlp-sink.mjs: an OTLP/HTTP receiver that takes every export and answers 200 at once, as
// a Collector on the same host would, so that a traced build's measured cost is its own: making spans,
// batching and encoding them, and sending them. Prints its port on stdout, then serves until killed.
import http from 'node:http';

const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200, { 'content-type': String(request.headers['content-type']) }).end());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
