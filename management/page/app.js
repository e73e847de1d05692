// The live cluster page of Troupe's management server. It reads the routes of the
// server that served it, follows GET /cluster/events, and redraws a part when an
// event says it changed (and every part every REFRESH_MS, in case an event was
// missed). Everything it shows is set as text (textContent, dataset, setAttribute):
// nothing that comes from the cluster is ever parsed as HTML.
"use strict";

(() => {
  const REFRESH_MS = 10000; // the slow refresh of every part
  const DEBOUNCE_MS = 150; // events that come together cause one refresh
  const MAX_EVENTS = 200; // the log keeps the newest ones

  // The parts of the page an event makes stale, by event type.
  const AFFECTS = {
    members: /^(member-|unreachable-member|reachable-member|oldest-changed|removal-margin-passed)/,
    shards: /^(shard-|member-(up|exited|downed|removed))/,
    singletons: /^(singleton-changed|oldest-changed|member-removed)/,
  };

  const $ = (id) => document.getElementById(id);
  let config = { selfNode: "", writesEnabled: false, eventTypes: [] };
  let token = ""; // the bearer token, kept in this page's memory only
  let operation = null; // the Leave or Down waiting for confirmation
  const lastStats = new Map(); // entity type -> its last stats, shown while a query fails
  const problems = new Map(); // part -> what went wrong reading it

  // el makes an element: opts.text becomes its text, opts.data its data-* attributes,
  // opts.attrs its other attributes; children are elements or strings (as text).
  function el(tag, opts = {}, ...children) {
    const e = document.createElement(tag);
    if (opts.className) e.className = opts.className;
    if (opts.text !== undefined) e.textContent = String(opts.text);
    for (const [k, v] of Object.entries(opts.data || {})) e.dataset[k] = String(v);
    for (const [k, v] of Object.entries(opts.attrs || {})) e.setAttribute(k, String(v));
    e.append(...children.filter((c) => c !== null && c !== undefined));
    return e;
  }

  const plural = (n, one, many = one + "s") => `${n} ${n === 1 ? one : many}`;

  async function getJSON(path) {
    const resp = await fetch(path, { cache: "no-store", headers: { Accept: "application/json" } });
    const body = await resp.json().catch(() => ({}));
    if (!resp.ok) throw new Error(body.error || `${resp.status} ${resp.statusText}`);
    return body;
  }

  // The notice line shows the result of the last Leave or Down.
  function showNotice(text) {
    $("notice").textContent = text;
    $("notice").hidden = text === "";
  }

  // The problems line shows what cannot be read now (or "" when everything can).
  function showProblems(text) {
    $("problems").textContent = text;
    $("problems").hidden = text === "";
  }

  // --- refreshing the parts ---------------------------------------------------

  const refreshers = { members: refreshMembers, shards: refreshShards, singletons: refreshSingletons };
  const timers = {};
  const running = {};
  const again = {};

  function schedule(part) {
    if (timers[part]) return;
    timers[part] = setTimeout(() => {
      timers[part] = null;
      refresh(part);
    }, DEBOUNCE_MS);
  }

  async function refresh(part) {
    if (running[part]) {
      again[part] = true; // one more pass once this one ends
      return;
    }
    running[part] = true;
    try {
      await refreshers[part]();
      problems.delete(part);
    } catch (err) {
      problems.set(part, err.message);
    } finally {
      running[part] = false;
      showProblems([...problems].map(([p, msg]) => `Cannot read the ${p}: ${msg}`).join(" · "));
      if (again[part]) {
        again[part] = false;
        refresh(part);
      }
    }
  }

  function refreshAll() {
    for (const part of Object.keys(refreshers)) refresh(part);
  }

  // --- members ----------------------------------------------------------------

  async function refreshMembers() {
    const v = await getJSON("cluster/members");
    const observers = new Map(v.unreachable.map((u) => [u.node, u.observedBy]));
    $("members").tBodies[0].replaceChildren(...v.members.map((m) => memberRow(m, v, observers.get(m.node))));
  }

  function memberRow(m, v, observedBy) {
    const who = el("td", {}, el("span", { className: "addr", text: m.node }));
    if (m.node === v.selfNode) who.append(" ", el("span", { className: "tag self", text: "this node" }));
    if (m.node === v.oldest) who.append(" ", el("span", { className: "tag oldest", text: "oldest" }));
    const roles = el("td", { text: m.roles.length ? "" : "none" });
    for (const r of m.roles) {
      const oldest = v.oldestPerRole[r] === m.node;
      roles.append(el("span", { className: oldest ? "tag oldest" : "tag", text: oldest ? `${r} (oldest)` : r }));
    }
    const reach = observedBy
      ? el("td", { className: "unreachable", text: `unreachable from ${observedBy.join(", ")}` })
      : el("td", { className: "reachable", text: "reachable" });
    const age = el("td", { text: m.ageOrder > 0 ? `#${m.ageOrder}` : "not up yet" });
    const row = el("tr", { data: { node: m.node, status: m.status, reachable: !observedBy } },
      who, el("td", { className: `status-${m.status}`, text: m.status }), roles, reach, age);
    if (config.writesEnabled) row.append(actionsCell(m));
    return row;
  }

  function actionsCell(m) {
    const td = el("td");
    if (["Joining", "WeaklyUp", "Up"].includes(m.status)) td.append(actionButton("Leave", m.node));
    if (!["Down", "Removed"].includes(m.status)) td.append(actionButton("Down", m.node));
    return td;
  }

  function actionButton(op, node) {
    const b = el("button", { text: op, data: { op }, attrs: { type: "button", "aria-label": `${op} ${node}` } });
    b.addEventListener("click", () => askToConfirm(op, node));
    return b;
  }

  // --- Leave and Down ---------------------------------------------------------

  function askToConfirm(op, node) {
    operation = { op, node };
    $("confirm-title").textContent = op === "Down" ? "Down a member" : "Make a member leave";
    $("confirm-text").textContent = op === "Down"
      ? `Down ${node}? Every member removes it at once; its shards and singletons move after the down-removal margin.`
      : `Make ${node} leave? It hands its shards and singletons over, leaves the cluster and stops its actor system.`;
    $("confirm-ok").textContent = op;
    $("token").value = token;
    $("confirm-error").hidden = true;
    $("confirm").showModal();
    (token ? $("confirm-ok") : $("token")).focus();
  }

  async function confirmOperation(ev) {
    ev.preventDefault();
    const { op, node } = operation;
    const given = $("token").value.trim();
    const ok = $("confirm-ok");
    ok.disabled = true;
    try {
      const resp = await fetch(`cluster/members/${encodeURIComponent(node)}`, {
        method: "PUT",
        cache: "no-store",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${given}` },
        body: JSON.stringify({ operation: op }),
      });
      const body = await resp.json().catch(() => ({}));
      if (!resp.ok) {
        if (resp.status === 401) token = "";
        const err = $("confirm-error");
        err.textContent = body.error || `${resp.status} ${resp.statusText}`;
        err.hidden = false;
        return;
      }
      token = given;
      $("confirm").close();
      showNotice(body.message || `${op} ${node}`);
      schedule("members");
    } catch (err) {
      $("confirm-error").textContent = err.message;
      $("confirm-error").hidden = false;
    } finally {
      ok.disabled = false;
    }
  }

  // --- shards -----------------------------------------------------------------

  async function refreshShards() {
    const v = await getJSON("cluster/shards");
    const sections = [];
    for (const t of v.entityTypes) sections.push(await shardSection(t.name));
    if (sections.length === 0) sections.push(el("p", { className: "empty", text: "No entity type is started on this node." }));
    $("shards").replaceChildren(...sections);
  }

  async function shardSection(type) {
    const section = el("section", { data: { type }, attrs: { "aria-label": `Shards of ${type}` } }, el("h3", { text: type }));
    let st = lastStats.get(type);
    try {
      st = await getJSON(`cluster/shards/${encodeURIComponent(type)}/stats`);
      lastStats.set(type, st);
    } catch (err) {
      section.append(el("p", { className: "failed", text: `Cannot read its shards now (${err.message}); showing the last answer.` }));
      if (!st) return section;
      section.dataset.stale = "true";
    }
    const max = Math.max(1, ...st.regions.map((r) => r.shards.length));
    const list = el("ul", { className: "bars" });
    for (const r of st.regions) {
      const entities = r.shards.reduce((n, s) => n + s.entityCount, 0);
      const fill = el("span");
      fill.style.width = `${(100 * r.shards.length) / max}%`;
      let label = `${plural(r.shards.length, "shard")}, ${plural(entities, "entity", "entities")}`;
      if (r.failed.length) label += `, ${r.failed.length} not answering`;
      const ids = r.shards.map((s) => s.shardId).join(", ");
      list.append(el("li", { data: { node: r.node, shards: r.shards.length, entities }, attrs: { title: ids ? `shards ${ids}` : "no shards" } },
        el("span", { className: "addr", text: r.node }),
        el("div", { className: "bar", attrs: { "aria-hidden": "true" } }, fill),
        el("span", { text: label })));
    }
    section.append(list);
    if (st.failed.length) section.append(el("p", { className: "failed", text: `Not answering: ${st.failed.join(", ")}` }));
    return section;
  }

  // --- singletons -------------------------------------------------------------

  async function refreshSingletons() {
    const v = await getJSON("cluster/singletons");
    const rows = v.singletons.map((s) => {
      const where = el("td", {}, el("span", { className: "addr", text: s.node || "nowhere yet" }));
      if (s.runningHere) where.append(" ", el("span", { className: "tag self", text: "here" }));
      return el("tr", { data: { name: s.name, node: s.node } },
        el("th", { text: s.name, attrs: { scope: "row" } }), where, el("td", { text: s.stopped ? `${s.state} (stopped)` : s.state }));
    });
    if (rows.length === 0) rows.push(el("tr", {}, el("td", { className: "empty", text: "No singleton has a manager on this node.", attrs: { colspan: 3 } })));
    $("singletons").tBodies[0].replaceChildren(...rows);
  }

  // --- events -----------------------------------------------------------------

  function describe(ev) {
    if (ev.member) {
      const was = ev.previousStatus ? ` (was ${ev.previousStatus})` : "";
      return `${ev.member.node} is ${ev.member.status}${was}`;
    }
    if (ev.type === "oldest-changed") return `oldest${ev.role ? ` with role ${ev.role}` : ""}: ${ev.oldest || "none"}`;
    if (ev.downing) {
      const d = ev.downing;
      const why = d.unstable ? " (reachability did not settle)" : "";
      return `${d.strategy} decided ${d.action}${why}: downing ${(d.down || []).join(", ") || "nobody"}`;
    }
    if (ev.shard) {
      const s = ev.shard;
      let text = `${s.typeName} shard ${s.shard}`;
      if (s.from) text += ` from ${s.from}`;
      if (s.to) text += ` to ${s.to}`;
      if (s.rebalance) text += " (rebalance)";
      if (s.durationMs) text += ` in ${Math.round(s.durationMs)} ms`;
      return text;
    }
    if (ev.singleton) {
      const s = ev.singleton;
      return `${s.name} on ${s.node || "nowhere"}${s.runningHere ? " (here)" : ""}${s.stopped ? " (manager stopped)" : ""}`;
    }
    return "";
  }

  function onEvent(type, data) {
    let ev;
    try {
      ev = JSON.parse(data);
    } catch {
      ev = { type };
    }
    const at = new Date(ev.time || Date.now());
    const log = $("events");
    log.prepend(el("li", { data: { type, node: ev.member ? ev.member.node : "" } },
      el("time", { text: at.toLocaleTimeString(), attrs: { datetime: at.toISOString() } }),
      el("span", { className: "type", text: type }),
      describe(ev)));
    while (log.children.length > MAX_EVENTS) log.lastElementChild.remove();
    for (const [part, re] of Object.entries(AFFECTS)) if (re.test(type)) schedule(part);
  }

  function setStreamState(text) {
    $("stream-state").textContent = text;
  }

  function connectEvents() {
    const es = new EventSource("cluster/events");
    es.addEventListener("open", () => {
      setStreamState("live");
      refreshAll(); // what changed while it was not connected
    });
    es.addEventListener("error", () => {
      if (es.readyState !== EventSource.CLOSED) {
        setStreamState("reconnecting…");
        return;
      }
      es.close(); // refused (too many streams, or the server stops): try again later
      setStreamState(`disconnected; trying again in ${REFRESH_MS / 1000} s`);
      setTimeout(connectEvents, REFRESH_MS);
    });
    for (const type of config.eventTypes) es.addEventListener(type, (e) => onEvent(type, e.data));
  }

  // --- start ------------------------------------------------------------------

  async function start() {
    try {
      config = await getJSON("config");
    } catch (err) {
      showProblems(`Cannot reach the management server: ${err.message}; trying again in ${REFRESH_MS / 1000} s.`);
      setTimeout(start, REFRESH_MS);
      return;
    }
    showProblems("");
    $("self-node").textContent = config.selfNode || "a node without a cluster";
    for (const e of document.querySelectorAll(".writes")) e.hidden = !config.writesEnabled;
    connectEvents();
    refreshAll();
    setInterval(refreshAll, REFRESH_MS);
  }

  $("confirm-form").addEventListener("submit", confirmOperation);
  $("confirm-cancel").addEventListener("click", () => $("confirm").close());
  start();
})();
