// A real OAuth 2.1 authorization server for the tests: oidc-provider (OpenID Certified) on
// 127.0.0.1, issuing JWT access tokens bound to the resource the client asks for (RFC 8707).
//
//   node server.mjs PORT
//
// Clients register themselves (RFC 7591), as the MCP SDK's OAuthClientProvider does; the
// client "machine" (secret "machine-secret") may use client_credentials, which the tests use
// to get tokens for another audience or with fewer scopes. The login and consent steps are
// two form posts a test makes: POST /interaction/UID/login (login=SUBJECT), then
// POST /interaction/UID/confirm (scope=... grants only those; all requested by default).
// ACCESS_TOKEN_TTL (seconds) sets the tokens' lifetime; ACCESS_TOKEN_FORMAT=opaque issues
// opaque tokens, which "machine" may introspect (RFC 7662) at /token/introspection.
// REVOCATION=1 offers token revocation (RFC 7009) at /token/revocation, which the discovery
// document then names (off by default: most tests want a server without it).
// Prints "listening ISSUER" when ready.
import { generateKeyPairSync } from 'node:crypto';

import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const scopes = ['tools:read', 'tools:write', 'echo:run'];
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'machine',
    client_secret: 'machine-secret',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: scopes.join(' '),
  }],
  jwks: { keys: [key] },
  scopes: ['openid', 'offline_access', ...scopes],
  pkce: { required: () => true },
  cookies: { keys: ['toolplug-test-cookies'] },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    revocation: { enabled: process.env.REVOCATION === '1' },
    introspection: {
      enabled: true,
      allowedPolicy: async (ctx, client) => client.clientId === 'machine',
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => ({
        scope: scopes.join(' '),
        audience: resourceIndicator,
        accessTokenTTL: Number(process.env.ACCESS_TOKEN_TTL ?? 300),
        accessTokenFormat: process.env.ACCESS_TOKEN_FORMAT ?? 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});

async function form(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(ctx.path);
  if (!match) {
    await next();
    return;
  }
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const [, , step] = match;
  if (ctx.method === 'GET' && !step) {
    ctx.body = { uid: details.uid, prompt: details.prompt.name, params: details.params };
    return;
  }
  const fields = await form(ctx.req);
  let result;
  if (step === 'login') {
    result = { login: { accountId: fields.get('login') || 'alice' } };
  } else if (step === 'confirm') {
    const { prompt: { details: missing }, params, session } = details;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const allowed = fields.get('scope')?.split(' ');
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    for (const [resource, wanted] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, wanted.filter((s) => !allowed || allowed.includes(s)).join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  } else {
    ctx.status = 404;
    return;
  }
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, {
    mergeWithLastSubmission: true,
  });
  ctx.status = 303;
  ctx.redirect(returnTo);
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
