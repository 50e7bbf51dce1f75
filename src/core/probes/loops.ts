// Loops of a holder's decoded code (inlinedEntries.ts): the edges that end one iteration.
// Tests: test/unit/core/probes/inlinedEntries.loops.test.ts, test/unit/core/probes/inlinedEntries.test.ts
import { SINK, type Graph } from './inlinedExits';

/**
 * The loops' back edges (p → n where n dominates p), by the iterative dominator algorithm of Cooper, Harvey and
 * Kennedy over a reverse postorder from the holder's entry. Code no path from the entry reaches has no edges here.
 */
export function loopBackEdges(g: Graph, entry: number): (p: number, n: number) => boolean {
  const { succ, pred } = g;
  const N = succ.length;
  const order = new Int32Array(N).fill(-1); // reverse-postorder number
  const rpo: number[] = [];
  depthFirst(succ, entry, undefined, (n) => rpo.push(n));
  rpo.reverse();
  rpo.forEach((n, k) => (order[n] = k));
  const idom = new Int32Array(N).fill(-1);
  idom[entry] = entry;
  const intersect = (a: number, b: number): number => {
    while (a !== b) {
      while (order[a] > order[b]) a = idom[a];
      while (order[b] > order[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const n of rpo) {
      if (n === entry) continue;
      let d = -1;
      for (const p of pred[n]) if (order[p] >= 0 && idom[p] >= 0) d = d < 0 ? p : intersect(p, d);
      if (d >= 0 && idom[n] !== d) {
        idom[n] = d;
        changed = true;
      }
    }
  }
  return (p, n) => {
    if (order[p] < 0 || order[n] < 0) return false;
    for (let d = p; ; d = idom[d]) {
      if (d === n) return true;
      if (d === entry || idom[d] < 0) return false;
    }
  };
}

/**
 * The edges that close a loop: within each strongly connected component of the holder's code (a loop, however GCC
 * enters it), the edges back to its head, and then the same within what is left of the component without those
 * edges (the loops nested in it). The head is where the component is entered from outside (or the holder's entry);
 * where GCC enters it at more than one place (an irreducible loop: the holder jumps into its middle), the first of
 * them in the code, as GCC lays a loop out from its head. In a reducible graph these are exactly the edges to a
 * dominator (loopBackEdges); an irreducible loop has no edge to a dominator, but its edges back to that head still
 * end an iteration. Code no path from the entry reaches has no such edges.
 */
export function loopClosingEdges(g: Graph, entry: number): (p: number, n: number) => boolean {
  const { succ, pred } = g;
  const N = succ.length;
  const reach = new Uint8Array(N);
  const stack = [entry];
  reach[entry] = 1;
  while (stack.length)
    for (const t of succ[stack.pop()!])
      if (t !== SINK && !reach[t]) {
        reach[t] = 1;
        stack.push(t);
      }
  const closing = new Set<number>();
  const key = (p: number, n: number) => p * N + n;
  const group = new Int32Array(N).fill(-1); // the part of the graph being split (its number)
  let groups = 0;
  const parts: number[][] = [[...Array(N).keys()].filter((n) => reach[n])];
  while (parts.length) {
    const nodes = parts.pop()!;
    const id = groups++;
    for (const n of nodes) group[n] = id;
    const edge = (n: number, t: number) => t !== SINK && group[t] === id && !closing.has(key(n, t));
    for (const scc of components(nodes, succ, edge)) {
      if (scc.length === 1 && !succ[scc[0]].some((t) => t === scc[0] && edge(t, t))) continue;
      const sid = groups++;
      for (const n of scc) group[n] = sid;
      // Its head: of the places it is entered at, the first in the code (instructions are numbered by address).
      const heads = scc.filter((n) => n === entry || pred[n].some((p) => reach[p] && group[p] !== sid));
      const head = Math.min(...(heads.length > 0 ? heads : scc));
      for (const p of pred[head]) if (group[p] === sid) closing.add(key(p, head));
      parts.push(scc);
    }
  }
  return (p, n) => closing.has(key(p, n));
}

/** Tarjan's strongly connected components of `nodes` over the edges `edge` allows (iteratively). */
function components(nodes: readonly number[], succ: readonly number[][], edge: (n: number, t: number) => boolean): number[][] {
  const index = new Map<number, number>();
  const low = new Map<number, number>();
  const onStack = new Set<number>();
  const stack: number[] = [];
  const out: number[][] = [];
  let next = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const frames: Array<[number, number]> = [[root, 0]];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (frames.length) {
      const top = frames[frames.length - 1];
      const [n, i] = top;
      if (i < succ[n].length) {
        top[1]++;
        const t = succ[n][i];
        if (!edge(n, t)) continue;
        if (!index.has(t)) {
          index.set(t, next);
          low.set(t, next++);
          stack.push(t);
          onStack.add(t);
          frames.push([t, 0]);
        } else if (onStack.has(t)) low.set(n, Math.min(low.get(n)!, index.get(t)!));
        continue;
      }
      frames.pop();
      if (frames.length) {
        const p = frames[frames.length - 1][0];
        low.set(p, Math.min(low.get(p)!, low.get(n)!));
      }
      if (low.get(n) === index.get(n)) {
        const scc: number[] = [];
        for (let m = -1; m !== n;) {
          m = stack.pop()!;
          onStack.delete(m);
          scc.push(m);
        }
        out.push(scc);
      }
    }
  }
  return out;
}

/**
 * Whether the holder's code has a loop GCC enters at more than one place: a depth-first search from the entry meets
 * an edge back to a node still on its path (a retreating edge) whose target does not dominate its source. In a
 * reducible graph every retreating edge is a back edge, and loopClosingEdges gives back edges only.
 */
export function hasIrreducibleLoop(g: Graph, entry: number, backEdge: (p: number, n: number) => boolean): boolean {
  return !depthFirst(g.succ, entry, (n, t, onPath) => !(onPath && !backEdge(n, t)));
}

/**
 * An iterative depth-first search from `entry` over `succ` (the sink left out): `edge(n, t, onPath)` for every edge
 * (`onPath`: t is on the search's current path, so n → t is a retreating edge), which may return false to stop the
 * search; `done(n)` as each node is finished (in postorder). Returns false when `edge` stopped it.
 */
function depthFirst(
  succ: readonly number[][],
  entry: number,
  edge?: (n: number, t: number, onPath: boolean) => boolean,
  done?: (n: number) => void,
): boolean {
  const state = new Uint8Array(succ.length); // 0 unseen, 1 on the path, 2 finished
  const frames: Array<[number, number]> = [[entry, 0]];
  state[entry] = 1;
  while (frames.length) {
    const top = frames[frames.length - 1];
    const [n, i] = top;
    if (i < succ[n].length) {
      top[1]++;
      const t = succ[n][i];
      if (t === SINK) continue;
      if (edge && !edge(n, t, state[t] === 1)) return false;
      if (state[t] === 0) {
        state[t] = 1;
        frames.push([t, 0]);
      }
      continue;
    }
    state[n] = 2;
    frames.pop();
    done?.(n);
  }
  return true;
}
