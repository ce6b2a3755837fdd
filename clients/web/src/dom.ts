/**
 * A tiny element builder: h("div.card.up", {attrs}, children). A `style` is set
 * through the CSSOM, not as an attribute: the server's Content-Security-Policy
 * (no 'unsafe-inline' styles) refuses a style attribute set by a script.
 */
export type Child = Node | string | null | undefined | false;

export function h(
  tag: string,
  attrs: Record<string, string | number | boolean | EventListener | undefined> = {},
  ...children: (Child | Child[])[]
): HTMLElement {
  const [name, ...classes] = tag.split(".");
  const element = document.createElement(name || "div");
  if (classes.length) element.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (key === "style") element.style.cssText = String(value);
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

/**
 * Puts `children` in `box`, in this order, leaving where it is each one already
 * there: a node taken out and put back is a new one to a screen reader, and a
 * live region's words in it are said again.
 */
export function placeChildren(box: Element, children: Node[]): void {
  for (const node of [...box.childNodes]) if (!children.includes(node)) node.remove();
  let at = box.firstChild;
  for (const child of children) {
    if (child === at) at = at.nextSibling;
    else box.insertBefore(child, at);
  }
}
