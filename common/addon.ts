// addon.ts — finds and loads one of PD3's native addons. Each part loads its own (docs/packaging.md):
// the host library pd3_host.node, the agent pd3_agent.node, the memory server pd3_memserver.node and
// the parsers pd3_parsers.node, so a process holds only the native code of the parts it uses.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The addons, by the part that owns each. */
export type AddonName = 'pd3_host' | 'pd3_agent' | 'pd3_memserver' | 'pd3_parsers';

const require = createRequire(import.meta.url);

/** Where an addon is loaded from: $PD3_ADDON_DIR/NAME.node, else the build tree of this package. */
export function addonPath(name: AddonName): string {
  const dir = process.env.PD3_ADDON_DIR;
  if (dir) return `${dir.replace(/\/+$/, '')}/${name}.node`;
  return fileURLToPath(new URL(`../../build/Release/${name}.node`, import.meta.url));
}

/** Loads an addon (Node caches it: a second call returns the same module). */
export function loadAddon<T>(name: AddonName): T {
  const path = addonPath(name);
  try {
    return require(path) as T;
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`pd3: cannot load the native addon ${path} (${why}); run \`npm run build\``, { cause: e });
  }
}
