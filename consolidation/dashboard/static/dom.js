// Small DOM helpers. Text from the service (memory contents above all) is only ever set as text, never as HTML.

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "className") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** Replace a table's body with one row per item; `cells(item)` gives each row's cells (text or nodes). Each cell
 *  carries its column's name, which a narrow screen shows beside it when rows wrap into cards (dashboard.css). */
export function fillRows(table, items, cells, empty = "nothing yet") {
  const body = table.tBodies[0];
  const headings = [...table.tHead.rows[0].cells].map((heading) => heading.textContent.trim());
  if (!table.classList.contains("keep-columns")) table.classList.add("stacks");
  body.replaceChildren();
  if (!items.length) {
    body.append(el("tr", { className: "empty" }, el("td", { colspan: headings.length, text: empty })));
    return;
  }
  for (const item of items) {
    body.append(el("tr", {}, ...cells(item).map((cell, index) => el("td", { dataset: { label: headings[index] } },
      cell instanceof Node ? cell : text(cell)))));
  }
}

/** `label: value` pairs into a <dl>. */
export function fillFacts(list, facts) {
  list.replaceChildren();
  for (const [label, value] of facts) {
    list.append(el("dt", { text: label }), el("dd", { text: value }));
  }
}

export function text(value) {
  return document.createTextNode(value === null || value === undefined ? "–" : String(value));
}

/** A time from the service (ISO-8601) as "YYYY-MM-DD HH:MM:SS UTC". */
export function when(iso) {
  if (!iso) return "–";
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime()) ? iso : `${moment.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

export function shortId(id) {
  return id ? id.slice(0, 8) : "–";
}

/** A memory's id (short, whole on hover) followed by the start of its text. */
export function memoryCell(id, content) {
  return el("span", {}, el("code", { title: id, text: shortId(id) }), " ", text(content ?? ""));
}

export function show(node, visible) {
  node.hidden = !visible;
}

let noticeTimer = null;

/** A message at the top of the page; errors stay until the next message. */
export function notify(message, isError = false) {
  const notice = document.getElementById("notice");
  notice.textContent = message;
  notice.className = isError ? "error" : "info";
  notice.hidden = false;
  clearTimeout(noticeTimer);
  if (!isError) noticeTimer = setTimeout(() => { notice.hidden = true; }, 6000);
}
