// What a Next.js app gets from @types/node and @types/react, reduced to
// what the examples use, so that they type-check here without either.
declare const process: { env: Record<string, string | undefined> };

declare namespace JSX {
  interface Element {}
  interface IntrinsicElements {
    [name: string]: { [attribute: string]: unknown };
  }
}
