// Plain-text gRPC over the Unix socket (as agentctl), with the ownership
// checks of ownership.ts run on every connection grpc-js opens, after
// connect(2) and before it writes its first byte (the HTTP/2 preface).
//
// grpc-js hands each new socket to its credentials' connector before using
// it; the insecure credentials' connector passes it through untouched. This
// one first checks that the path is still the socket file checked before
// the channel was made (`checked`), and destroys the socket otherwise, so
// nothing is ever sent to a socket someone else made. A daemon that
// restarted binds a new file: the old channel then fails, and the session
// checks the path afresh and opens a new one (session.ts).

import * as grpc from "@grpc/grpc-js";
import type { Socket } from "node:net";
import { recheckSocketPath, type SocketIdentity, UnsafeSocket } from "./ownership";

type Connector = ReturnType<grpc.ChannelCredentials["_createSecureConnector"]>;

export class CheckedSocketCredentials extends grpc.ChannelCredentials {
  /** The last refusal, for the message a person sees. */
  refusal: UnsafeSocket | undefined;

  constructor(
    private readonly socket: string,
    private readonly me: number,
    private readonly checked: SocketIdentity,
  ) {
    super();
  }

  _isSecure(): boolean {
    return false;
  }

  _equals(other: grpc.ChannelCredentials): boolean {
    return other === this;
  }

  _createSecureConnector(
    ...args: Parameters<grpc.ChannelCredentials["_createSecureConnector"]>
  ): Connector {
    const inner = grpc.credentials.createInsecure()._createSecureConnector(...args);
    return {
      connect: async (socket: Socket) => {
        try {
          recheckSocketPath(this.socket, this.me, this.checked);
        } catch (e) {
          this.refusal = e instanceof UnsafeSocket ? e : new UnsafeSocket(this.socket, String(e));
          socket.destroy();
          throw this.refusal;
        }
        return inner.connect(socket);
      },
      waitForReady: () => inner.waitForReady(),
      getCallCredentials: () => inner.getCallCredentials(),
      destroy: () => inner.destroy(),
    };
  }
}
