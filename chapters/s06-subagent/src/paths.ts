/**
 * Workspace paths: what "inside WORKDIR" means. The checks before a tool call decide with
 * these, and `glob` filters what it lists. Paths are compared as real
 * paths, symlinks resolved, so `..`, absolute paths and links that leave the workspace are
 * all outside, and a dangling link counts as where it points.
 */
import { readlinkSync, realpathSync } from "node:fs";
import path from "node:path";

/** The absolute path `p` names, relative to the workspace (`..` normalised, no fs access). */
export function resolveInWorkspace(workdir: string, p: string): string {
  return path.resolve(workdir, p);
}

/** How many symlinks `realPathOf` follows by hand before giving up (a loop). */
const MAX_LINKS = 40;

/**
 * The real path of `p`, symlinks resolved. For a path that does not exist yet (a new
 * file), the real path of its deepest existing ancestor joined with the rest. A dangling
 * symlink counts as its target, so writing through it cannot leave the workspace.
 */
export function realPathOf(p: string): string {
  return realPathFollowing(path.resolve(p), 0);
}

function realPathFollowing(absolute: string, links: number): string {
  try {
    return realpathSync(absolute);
  } catch {
    // Missing, a dangling link, or something in the way: resolve it one step at a time.
  }
  const parent = path.dirname(absolute);
  if (parent === absolute || links > MAX_LINKS) return absolute;
  const realParent = realPathFollowing(parent, links);
  const here = path.join(realParent, path.basename(absolute));
  const link = linkTarget(here);
  if (link === null) return here;
  return followTarget(path.isAbsolute(link) ? path.sep : realParent, link, links + 1);
}

/**
 * Where a link's target leads, read as the system reads it: one segment at a time from
 * `base`, each link on the way followed before the next `..` is taken. (Resolving the
 * target as text would turn `up/../x`, with `up` a link, into a path the system never
 * opens, and a write through such a dangling link could leave the workspace unseen.)
 */
function followTarget(base: string, target: string, links: number): string {
  let current = base;
  for (const segment of target.split(path.sep)) {
    if (segment === "" || segment === ".") continue;
    current =
      segment === ".."
        ? path.dirname(current)
        : realPathFollowing(path.join(current, segment), links);
  }
  return current;
}

/** What the symlink `p` points to, or null when `p` is not a symlink (or is missing). */
function linkTarget(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

/**
 * True when `child` is `parent` or lies under it, comparing real paths with a separator
 * appended, so `/work2` is not inside `/work`.
 */
export function isInside(child: string, parent: string): boolean {
  const realChild = realPathOf(child);
  const realParent = realPathOf(parent);
  if (realChild === realParent) return true;
  const prefix = realParent.endsWith(path.sep) ? realParent : realParent + path.sep;
  return realChild.startsWith(prefix);
}
