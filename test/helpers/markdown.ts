/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export const headingAnchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

/** The anchors of every heading of a Markdown text. */
export const headingAnchors = (markdown: string) => new Set([...markdown.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => headingAnchor(heading!)));
