// JSON-RPC 2.0 over a WebSocket, as ACP speaks it. A dropped connection rejects what was waiting and
// reconnects with backoff; nothing is ever sent again on its own.

export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export class Connection {
  /** handlers: {open(), closed(), notification(method, params), request(method, params, id) -> Promise<result>} */
  constructor(url, handlers) {
    this.url = url;
    this.handlers = handlers;
    this.socket = null;
    this.nextId = 1;
    this.pending = new Map();
    this.delay = 250;
    this.timer = null;
  }

  connect() {
    clearTimeout(this.timer);
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.delay = 250;
      this.handlers.open();
    });
    socket.addEventListener("message", (event) => this.receive(event.data));
    socket.addEventListener("close", () => this.lost(socket));
  }

  get isOpen() {
    return this.socket !== null && this.socket.readyState === WebSocket.OPEN;
  }

  lost(socket) {
    if (socket !== this.socket) return;
    this.socket = null;
    for (const { reject } of this.pending.values()) reject(new RpcError(-32000, "the connection was lost"));
    this.pending.clear();
    this.handlers.closed();
    this.timer = setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  }

  send(message) {
    if (!this.isOpen) throw new RpcError(-32000, "not connected");
    this.socket.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
  }

  call(method, params) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      try {
        this.send({ id, method, params });
      } catch (error) {
        reject(error);
        return;
      }
      this.pending.set(id, { resolve, reject });
    });
  }

  notify(method, params) {
    this.send({ method, params });
  }

  async receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (message.method === undefined) {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if (message.error) waiting.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else waiting.resolve(message.result);
      return;
    }
    if (message.id === undefined) {
      this.handlers.notification(message.method, message.params || {});
      return;
    }
    const socket = this.socket;
    let reply;
    try {
      reply = { id: message.id, result: await this.handlers.request(message.method, message.params || {}, message.id) };
    } catch (error) {
      reply = { id: message.id, error: { code: error.code || -32603, message: error.message } };
    }
    if (socket === this.socket && this.isOpen) this.send(reply);
  }
}
