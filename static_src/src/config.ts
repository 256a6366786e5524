// The shell page hands the SPA its URLs in a json_script block:
// nothing here is hard-coded, so any URL prefix works.

export interface ShellConfig {
  mount: string; // the shell's URL, e.g. "/admin/wurk/"
  api: string; // the JSON API's base, e.g. "/admin/wurk/api/"
  assets: string; // where the bundle is served, e.g. "/admin/wurk/static/"
}

const CONFIG_IDS = ["wurk-config", "wurk_config"];

function withSlash(url: string): string {
  return url.endsWith("/") ? url : url + "/";
}

export function readConfig(): ShellConfig {
  let raw: Partial<ShellConfig> = {};
  for (const id of CONFIG_IDS) {
    const node = document.getElementById(id);
    if (node?.textContent) {
      raw = JSON.parse(node.textContent);
      break;
    }
  }
  // Without a config (a bare page), assume the script sits in <mount>static/assets/.
  const mount = withSlash(raw.mount || new URL(import.meta.url).pathname.replace(/static\/assets\/[^/]*$/, ""));
  return {
    mount,
    api: withSlash(raw.api || mount + "api/"),
    assets: withSlash(raw.assets || mount + "static/"),
  };
}

export const config: ShellConfig = readConfig();
