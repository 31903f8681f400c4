// The gRPC client: @grpc/grpc-js with @grpc/proto-loader reading the
// project's proto at run time (it ships inside the extension), over the
// checked Unix-socket credentials.

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { CheckedSocketCredentials } from "./credentials";
import type { SocketIdentity } from "./ownership";

export const LOAD_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

type Unary = (req: object, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

/** The AgentService client with promise-returning unary calls. */
export class AgentdClient {
  readonly raw: grpc.Client & Record<string, unknown>;

  constructor(
    readonly socket: string,
    readonly credentials: CheckedSocketCredentials,
    ctor: grpc.ServiceClientConstructor,
  ) {
    this.raw = new ctor(`unix:${socket}`, credentials) as grpc.Client & Record<string, unknown>;
  }

  /** One unary call; `deadlineMs` bounds it (a hung daemon is an error, not a hang). */
  call<T>(method: string, req: object, deadlineMs = 30_000): Promise<T> {
    const fn = this.raw[method] as Unary | undefined;
    if (typeof fn !== "function") return Promise.reject(new Error(`no method ${method}`));
    return new Promise<T>((resolve, reject) => {
      fn.call(this.raw, req, { deadline: Date.now() + deadlineMs }, (err, res) => {
        if (err) reject(err);
        else resolve(res as T);
      });
    });
  }

  watch(): grpc.ClientReadableStream<unknown> {
    return (this.raw.Watch as (req: object) => grpc.ClientReadableStream<unknown>).call(this.raw, {});
  }

  attach(): grpc.ClientDuplexStream<unknown, unknown> {
    return (this.raw.Attach as () => grpc.ClientDuplexStream<unknown, unknown>).call(this.raw);
  }

  close(): void {
    this.raw.close();
  }
}

let service: grpc.ServiceClientConstructor | undefined;

/** Loads the AgentService definition once. */
export function agentService(protoFile: string): grpc.ServiceClientConstructor {
  if (service === undefined) {
    const def = protoLoader.loadSync(protoFile, LOAD_OPTIONS);
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      agentd: { v1: { AgentService: grpc.ServiceClientConstructor } };
    };
    service = pkg.agentd.v1.AgentService;
  }
  return service;
}

export function openClient(protoFile: string, socket: string, me: number, checked: SocketIdentity): AgentdClient {
  return new AgentdClient(socket, new CheckedSocketCredentials(socket, me, checked), agentService(protoFile));
}

/** A gRPC error's status name and message, for a person. */
export function describeError(e: unknown): string {
  const err = e as Partial<grpc.ServiceError>;
  if (typeof err.code === "number") {
    const name = grpc.status[err.code] ?? String(err.code);
    return `${name}: ${err.details ?? err.message ?? ""}`;
  }
  return e instanceof Error ? e.message : String(e);
}
