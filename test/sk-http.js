// node's http server with keep-alive, for the socket cases (as sk-http.py).
const http = require("http");
const server = http.createServer((req, res) => {
	res.writeHead(200, { "Content-Length": 6 });
	res.end("hello\n");
});
server.keepAliveTimeout = 600000;
server.listen(Number(process.argv[2]), "127.0.0.1");
