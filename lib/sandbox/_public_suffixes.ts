/**
 * Which `hosts` wildcards of an allowlist are too broad to be meant: one directly under a
 * top-level domain (`*.com`, `*.test`) or directly under a well-known multi-label public
 * suffix (`*.co.uk`, `*.github.io`), where anyone can register a name, so the wildcard allows
 * every site registered there.
 *
 * A short list of our own, not the Public Suffix List (publicsuffix.org) as a dependency: this
 * check only catches a slip at `reserve()` (the caller owns the allowlist, and
 * `allowBroadWildcards` lets a meant one through), while the full list is about ten thousand
 * rules that change every week, and its npm packages are large for one validation message:
 * the well-kept `tldts` 7.6 is 3.2 MB unpacked plus 0.6 MB of `tldts-core` (the data in
 * several builds), `psl` 1.15 0.7 MB plus `punycode` (npm pack, 2026-12). Top-level
 * domains need no list at all (any single label); the list holds the multi-label suffixes
 * with the most registrations (country second levels) and the hosting platforms whose
 * customers get subdomains. A suffix not listed is not refused: read the README's "Egress
 * allowlist" before listing a wildcard under a platform's domain.
 *
 * @module
 */

/** Multi-label public suffixes under which a wildcard is refused (lower case, no dots around). */
const PUBLIC_SUFFIXES: ReadonlySet<string> = new Set([
  // Country second levels (ICANN section of the Public Suffix List).
  "co.uk", "org.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk", "ac.uk", "gov.uk",
  "com.au", "net.au", "org.au", "edu.au", "gov.au",
  "co.nz", "net.nz", "org.nz",
  "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp",
  "co.kr", "or.kr",
  "com.cn", "net.cn", "org.cn",
  "com.tw", "com.hk", "com.sg", "com.my",
  "co.in", "net.in", "org.in",
  "co.za", "co.il", "co.id", "co.th",
  "com.br", "net.br", "org.br", "com.mx", "com.ar", "com.co",
  "com.tr", "com.ua", "com.pl", "com.es",
  // Hosting platforms whose customers get subdomains (private section of the list).
  "github.io", "gitlab.io", "herokuapp.com", "appspot.com", "blogspot.com", "azurewebsites.net",
  "cloudfront.net", "netlify.app", "vercel.app", "pages.dev", "workers.dev", "web.app",
  "firebaseapp.com", "fly.dev", "onrender.com", "ngrok.io", "ngrok-free.app", "readthedocs.io",
]);

/**
 * Why the wildcard `*.parent` is too broad, or `undefined` when it is not.
 *
 * @param parent the wildcard's parent name, lower case, without a trailing dot or a port
 * @returns a "must not …: fix" sentence naming the parent and an example of the fix
 */
export function broadWildcardDefect(parent: string): string | undefined {
  const kind = !parent.includes(".") ? "top-level domain" : PUBLIC_SUFFIXES.has(parent) ? "public suffix" : undefined;
  if (kind === undefined) return undefined;
  return `must not be a wildcard directly under the ${kind} ${parent} (*.${parent} allows every site registered under it): name the site (*.example.${parent}), or set policy.network.allowBroadWildcards to true`;
}
