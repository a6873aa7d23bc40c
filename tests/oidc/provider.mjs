// A real OpenID Connect provider for Stalwart's single sign-on tests (oidc-provider, its development login form).
//
//   node provider.mjs   with   OIDC_PORT, OIDC_REDIRECT_URI (the master's /oidc/callback), OIDC_CLIENT_ID,
//                              OIDC_CLIENT_SECRET, OIDC_GROUPS_FILE (JSON: login name -> its groups; read at
//                              every login, so a test can change them between logins)
//
// The login form accepts any login name (and any password). The account's claims: sub = the login name,
// email = <login>@example.test, name, preferred_username, groups = the file's entry for the login, or []. The one client is
// first-party: its grant is given without a consent page. Prints "ready <issuer>" once it listens.
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const groupsOf = (id) => JSON.parse(readFileSync(process.env.OIDC_GROUPS_FILE, 'utf8'))[id] || [];
const scopes = 'openid email profile groups';

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID,
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  cookies: { keys: ['stalwart-test-provider-cookie-key'] },
  scopes: scopes.split(' '),
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return {
          sub: id, email: `${id}@example.test`, email_verified: true, name: `Test ${id}`,
          preferred_username: id, groups: groupsOf(id),
        };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const { client, session, result } = ctx.oidc;
    const grantId = result?.consent?.grantId || session.grantIdFor(client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addOIDCScope(scopes);
    await grant.save();
    return grant;
  },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
