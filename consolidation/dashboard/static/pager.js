// Paging through a list route (limit + offset): "Previous" / "Next" and where we are.

import { el } from "./dom.js";

export class Pager {
  /** `fetchPage(limit, offset)` answers a page ({items, total, limit, offset}); `render(page)` shows it. */
  constructor(container, size, fetchPage, render) {
    this.container = container;
    this.size = size;
    this.offset = 0;
    this.latest = 0;
    this.fetchPage = fetchPage;
    this.render = render;
  }

  async load(offset = this.offset) {
    const ticket = ++this.latest;
    const page = await this.fetchPage(this.size, Math.max(0, offset));
    // Answers can arrive out of order (a refresh, then a click on another tab): only the newest is shown.
    if (ticket !== this.latest) return null;
    // A list that shrank (a restore took an item away) may leave us past its end: step back to its last page.
    if (!page.items.length && page.total > 0 && page.offset > 0) {
      return this.load(Math.floor((page.total - 1) / this.size) * this.size);
    }
    this.offset = page.offset;
    this.render(page);
    this.draw(page);
    return page;
  }

  draw(page) {
    const first = page.total ? page.offset + 1 : 0;
    const last = page.offset + page.items.length;
    this.container.replaceChildren(
      el("button", { type: "button", text: "Previous", ...(page.offset > 0 ? {} : { disabled: "" }),
        onclick: () => this.load(page.offset - this.size) }),
      el("span", { className: "muted", text: `${first}–${last} of ${page.total}` }),
      el("button", { type: "button", text: "Next", ...(last < page.total ? {} : { disabled: "" }),
        onclick: () => this.load(page.offset + this.size) }),
    );
  }
}
