import { CommandFailed } from './command-errors.js';

/** The one line for a server that could not listen on `host`:`port`: what the system's error code means there, without a stack. */
export function listenFailure(error: unknown, host: string, port: number): CommandFailed {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  switch (code) {
    case 'EADDRINUSE':
      return new CommandFailed(`port ${port} on ${host} is already in use`);
    case 'EACCES':
      return new CommandFailed(`permission denied to listen on port ${port} on ${host}${port < 1024 ? ': ports below 1024 need privileges' : ''}`);
    case 'EADDRNOTAVAIL':
      return new CommandFailed(`HOST ${host} is not an address of this machine`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new CommandFailed(`HOST ${host} does not resolve to an address`);
    default:
      return new CommandFailed(`cannot listen on port ${port} on ${host}: ${String(message).split('\n')[0]}`);
  }
}
