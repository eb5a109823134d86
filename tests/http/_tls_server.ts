/**
 * What the HTTPS tests share: serveHttp over TLS on 127.0.0.1 at a free port with a certificate
 * of tests/http/_tls_certs.ts, without auth, logging to the quiet test logger, with no open-file
 * limit; each test adds or overrides the options it is about.
 */
import { type HttpServerHandle, serveHttp, type ServeOptions } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

/** serveHttp over TLS with `tls` (selfSignedCert's files), `o` over the defaults above. */
export function serveHttps(
  tls: { readonly cert: string; readonly key: string },
  o: Partial<ServeOptions> & Pick<ServeOptions, "handler">,
): Promise<HttpServerHandle> {
  return serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: tls.cert,
    tlsKeyPath: tls.key,
    authEnabled: false,
    allowInsecureBind: false,
    log: testLogger(),
    openFileLimit: null,
    ...o,
  });
}
