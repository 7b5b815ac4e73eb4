import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/** A client connection and its upstream one; bytes cross between them until black-holed. */
interface Link {
  client: Socket;
  upstream: Socket;
  blackHoled: boolean;
}

/** A plain TCP proxy on loopback, in front of one upstream address. */
export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Bytes read from either side of a black-holed link and thrown away. */
  readonly swallowedBytes: number;
  /**
   * Every link open now stops forwarding in both directions while both of its sockets stay open:
   * no FIN, no RST, as across a load balancer that lost its backend or a black-holed route.
   * Connections made later are forwarded as usual.
   */
  blackHoleOpenLinks(): number;
  /** Destroys every socket and stops listening. */
  close(): Promise<void>;
}

export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const links = new Set<Link>();
  let connections = 0;
  let swallowedBytes = 0;
  const forward = (link: Link, from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => {
      // Read and thrown away rather than left unread: the sender's writes keep succeeding, so
      // nothing on its side notices (TCP flow control would not stall it either).
      if (link.blackHoled) swallowedBytes += chunk.length;
      else to.write(chunk);
    });
    from.on('end', () => {
      if (!link.blackHoled) to.end();
    });
    from.on('error', () => {
      if (!link.blackHoled) to.destroy();
    });
    from.on('close', () => {
      if (!link.blackHoled) to.destroy();
      if (link.client.destroyed && link.upstream.destroyed) links.delete(link);
    });
  };
  const server = createServer((client) => {
    connections += 1;
    const link: Link = { client, upstream: connect(upstream.port, upstream.host), blackHoled: false };
    links.add(link);
    forward(link, client, link.upstream);
    forward(link, link.upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    get swallowedBytes() {
      return swallowedBytes;
    },
    blackHoleOpenLinks() {
      let count = 0;
      for (const link of links) {
        if (link.client.destroyed || link.blackHoled) continue;
        link.blackHoled = true;
        count += 1;
      }
      return count;
    },
    async close() {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
