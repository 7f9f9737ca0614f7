/**
 * MCP authorization (revision 2025-11-25), the client's side: what a remote server's 401
 * starts, so that its requests carry `Authorization: Bearer <token>`.
 *
 *   401 + WWW-Authenticate ──> protected resource metadata (its resource_metadata URL, or
 *        /.well-known/oauth-protected-resource for the path, then for the origin)
 *   ──> authorization server metadata (oauth-authorization-server, then openid-configuration,
 *        path-aware; none at all: /authorize, /token, /register at the root)
 *   ──> a client id: pre-registered, the client's metadata document URL, or registration
 *   ──> authorization code with PKCE (S256), `state` and `resource`, the code received at
 *        the redirect URI ──> the token endpoint (client_secret_basic, _post or none)
 *   403 insufficient_scope ──> the same again with the scope asked for, at most 3 times
 *
 * Scopes come from WWW-Authenticate, else from the resource's scopes_supported, else none.
 * Tokens are kept per server in a file only the user can read; they are never logged.
 */
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Authorization attempts one request may cause before it fails (a 403 loop stops here). */
export const MAX_AUTH_ATTEMPTS = 3;

/** Where the code comes back: the redirect URI, and the wait for the redirect to arrive. */
export interface Callback {
  redirectUri: string;
  /** Sends the user (or, headless, a request) to the authorization URL; the redirect's query. */
  authorize(url: URL): Promise<URLSearchParams>;
}

export interface AuthOptions {
  /** Where this server's token is kept (mode 0600). */
  tokenFile: string;
  /** Opens a callback for one authorization (a loopback listener, say). */
  callback(): Promise<Callback>;
  /** A client registered beforehand (no dynamic registration then). */
  client?: { id: string; secret?: string };
  /**
   * The URL of the client's own metadata document: its client id where the authorization
   * server takes such ids (`client_id_metadata_document_supported`), instead of registering.
   */
  clientMetadataUrl?: string;
  /** For messages: where the token came from and what happened. */
  say?(text: string): void;
}

interface Metadata {
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint?: string;
  token_endpoint_auth_methods_supported?: string[];
  client_id_metadata_document_supported?: boolean;
}

interface Client {
  id: string;
  secret?: string;
  method?: string;
}

/** The parameters of a `WWW-Authenticate: Bearer k="v", …` challenge. */
export function bearerChallenge(header: string | null): Record<string, string> {
  const params: Record<string, string> = {};
  if (!header || !/^\s*bearer\b/i.test(header)) return params;
  for (const match of header.matchAll(/([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) {
    params[match[1]!.toLowerCase()] = match[2] ?? match[3] ?? "";
  }
  return params;
}

/** One server's authorization: its token, and the flow that gets a new one. */
export class OAuth {
  private token: string | null = null;
  private readonly resource: string;
  private readonly options: AuthOptions;

  constructor(serverUrl: string, options: AuthOptions) {
    this.resource = serverUrl;
    this.options = options;
    try {
      this.token =
        (JSON.parse(readFileSync(options.tokenFile, "utf8")) as { access_token?: string })
          .access_token ?? null;
    } catch {
      this.token = null; // none yet, or unreadable: a 401 gets a new one
    }
  }

  /** The header every request carries once there is a token. */
  headers(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  /** Whether a token is held (for /mcp). */
  get state(): string {
    return this.token ? "token held" : "no token";
  }

  /**
   * Answers a 401 (no or a bad token) or a 403 asking for more scope: runs the flow and
   * keeps the new token. Throws, in words, when the flow cannot finish.
   */
  async authorize(challenge: string | null): Promise<void> {
    const asked = bearerChallenge(challenge);
    const resource = await this.resourceMetadata(asked.resource_metadata);
    const issuer = resource?.authorization_servers?.[0] ?? new URL(this.resource).origin;
    const server = await authServerMetadata(issuer);
    const scope = asked.scope ?? resource?.scopes_supported?.join(" ");
    const callback = await this.options.callback();
    const client = await this.client(server, callback.redirectUri);
    const verifier = base64url(randomBytes(32));
    const state = base64url(randomBytes(16));
    const url = new URL(server.authorization_endpoint);
    const query = {
      response_type: "code",
      client_id: client.id,
      redirect_uri: callback.redirectUri,
      code_challenge: base64url(createHash("sha256").update(verifier).digest()),
      code_challenge_method: "S256",
      state,
      resource: this.resource,
      ...(scope ? { scope } : {}),
    };
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const answer = await callback.authorize(url);
    if (answer.get("state") !== state)
      throw new Error("the authorization answer's state does not match: refused");
    const code = answer.get("code");
    if (!code)
      throw new Error(
        `the authorization server gave no code (${answer.get("error") ?? "no error either"})`,
      );
    const body = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: callback.redirectUri,
      code_verifier: verifier,
      resource: this.resource,
    });
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    };
    const method = tokenAuthMethod(client, server);
    if (method === "client_secret_basic") {
      const pair = `${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret ?? "")}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    } else {
      body.set("client_id", client.id);
      if (method === "client_secret_post") body.set("client_secret", client.secret ?? "");
    }
    const response = await fetch(server.token_endpoint, { method: "POST", headers, body });
    const tokens = (await response.json().catch(() => ({}))) as {
      access_token?: unknown;
      error?: unknown;
    };
    if (!response.ok || typeof tokens.access_token !== "string") {
      throw new Error(
        `the token endpoint refused (HTTP ${response.status}${tokens.error ? `: ${String(tokens.error)}` : ""})`,
      );
    }
    this.token = tokens.access_token;
    mkdirSync(path.dirname(this.options.tokenFile), { recursive: true });
    writeFileSync(this.options.tokenFile, JSON.stringify(tokens), { mode: 0o600 });
    chmodSync(this.options.tokenFile, 0o600);
    this.options.say?.(`authorized${scope ? ` (scope ${scope})` : ""}`);
  }

  /** The resource's metadata: the URL the challenge names, else the well-known paths. */
  private async resourceMetadata(named: string | undefined): Promise<{
    authorization_servers?: string[];
    scopes_supported?: string[];
    resource?: string;
  } | null> {
    const url = new URL(this.resource);
    const candidates = named
      ? [named]
      : [
          ...(url.pathname !== "/"
            ? [`${url.origin}/.well-known/oauth-protected-resource${url.pathname}`]
            : []),
          `${url.origin}/.well-known/oauth-protected-resource`,
        ];
    for (const candidate of candidates) {
      const found = await getJson(candidate);
      if (found) {
        const resource = found as { resource?: unknown };
        if (
          typeof resource.resource === "string" &&
          !sameResource(resource.resource, this.resource)
        ) {
          throw new Error(
            `the server's metadata names another resource (${resource.resource}); refused`,
          );
        }
        return found as { authorization_servers?: string[]; scopes_supported?: string[] };
      }
    }
    return null;
  }

  /** The client id: pre-registered, or registered now. */
  private async client(server: Metadata, redirectUri: string): Promise<Client> {
    if (this.options.client) return { ...this.options.client };
    if (server.client_id_metadata_document_supported === true && this.options.clientMetadataUrl) {
      return { id: this.options.clientMetadataUrl };
    }
    if (!server.registration_endpoint) {
      throw new Error(
        "the authorization server offers no registration, and no client id is configured",
      );
    }
    const response = await fetch(server.registration_endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({
        client_name: "learn-harness",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      }),
    });
    const registered = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (!response.ok || typeof registered.client_id !== "string") {
      throw new Error(`client registration was refused (HTTP ${response.status})`);
    }
    return {
      id: registered.client_id,
      ...(typeof registered.client_secret === "string" ? { secret: registered.client_secret } : {}),
      ...(typeof registered.token_endpoint_auth_method === "string"
        ? { method: registered.token_endpoint_auth_method }
        : {}),
    };
  }
}

/**
 * A callback on this machine: a listener on 127.0.0.1 that takes one redirect, for the
 * user's browser. `show` prints the URL to open.
 */
export async function loopbackCallback(
  show: (url: URL) => void | Promise<void>,
  waitMs = 300_000,
): Promise<Callback> {
  const { createServer } = await import("node:http");
  let settle: (query: URLSearchParams) => void = () => {};
  let fail: (error: Error) => void = () => {};
  const answered = new Promise<URLSearchParams>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/plain" }).end("Signed in. You can close this tab.");
    settle(url.searchParams);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    async authorize(url) {
      await show(url);
      const timer = setTimeout(() => fail(new Error("no sign-in within 5 minutes")), waitMs);
      try {
        return await answered;
      } finally {
        clearTimeout(timer);
        server.close();
      }
    },
  };
}

/** A callback with no browser: the authorization URL is fetched and its redirect read. */
export function headlessCallback(redirectUri = "http://127.0.0.1:1/callback"): Callback {
  return {
    redirectUri,
    async authorize(url) {
      const response = await fetch(url, { redirect: "manual" });
      const location = response.headers.get("location");
      await response.body?.cancel();
      if (!location)
        throw new Error(`the authorization endpoint did not redirect (HTTP ${response.status})`);
      return new URL(location, url).searchParams;
    },
  };
}

/** The authorization server's metadata, path-aware, with the 2025-03-26 fallbacks. */
async function authServerMetadata(issuer: string): Promise<Metadata> {
  const url = new URL(issuer);
  const tail = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  const candidates = tail
    ? [
        `${url.origin}/.well-known/oauth-authorization-server${tail}`,
        `${url.origin}/.well-known/openid-configuration${tail}`,
        `${url.origin}${tail}/.well-known/openid-configuration`,
      ]
    : [
        `${url.origin}/.well-known/oauth-authorization-server`,
        `${url.origin}/.well-known/openid-configuration`,
      ];
  for (const candidate of candidates) {
    const found = (await getJson(candidate)) as Partial<Metadata> | null;
    if (found?.authorization_endpoint && found.token_endpoint) return found as Metadata;
  }
  // No metadata at all: the endpoints the 2025-03-26 revision put at the root.
  return {
    authorization_endpoint: `${url.origin}/authorize`,
    token_endpoint: `${url.origin}/token`,
    registration_endpoint: `${url.origin}/register`,
  };
}

/** How the client proves itself at the token endpoint: what it registered, else what the server takes. */
function tokenAuthMethod(client: Client, server: Metadata): string {
  if (client.method) return client.method;
  if (!client.secret) return "none";
  const supported = server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
  return supported.includes("client_secret_basic") ? "client_secret_basic" : "client_secret_post";
}

async function getJson(url: string): Promise<unknown> {
  try {
    const response = await fetch(url, { headers: { accept: "application/json" } });
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    return await response.json();
  } catch {
    return null;
  }
}

function sameResource(named: string, server: string): boolean {
  const strip = (u: string) => u.replace(/\/+$/, "");
  return strip(server).startsWith(strip(named));
}

function base64url(bytes: Buffer): string {
  return bytes.toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
