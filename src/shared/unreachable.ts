// The `default` of a `switch` that has a case for every member of a union: `unreachable(x, 'what')` compiles only
// while `x` is `never` there, so a member added to the union later is a compile error at each switch that forgets
// it rather than a silent fall-through. Should a value outside the type arrive anyway (a cast, a bad input), it
// throws naming it. Messages between the panel and its host use ./protocol's `unhandled` instead, which ignores
// another version's message.
export function unreachable(value: never, what: string): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
