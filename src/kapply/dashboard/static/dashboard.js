// kapply dashboard: fills the page from the server's JSON and server-sent events. Text only (textContent), never HTML.
"use strict";
(function () {
  const base = "/" + location.pathname.split("/")[1] + "/";
  const csrf = document.querySelector('meta[name="kapply-csrf"]').content;

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function fillTable(id, items, cells) {
    const body = document.querySelector("#" + id + " tbody");
    body.replaceChildren();
    if (!Array.isArray(items)) {
      const tr = el("tr");
      const td = el("td", items && items.error ? items.error : "", "error");
      td.colSpan = document.querySelectorAll("#" + id + " thead th").length;
      tr.append(td);
      body.append(tr);
      return;
    }
    for (const item of items) {
      const tr = el("tr");
      for (const cell of cells(item)) tr.append(cell instanceof Node ? cell : el("td", cell));
      body.append(tr);
    }
  }

  // kubectl's short age of an RFC 3339 time ("" for none): computed in the page, so that it stays current.
  function ago(time) {
    const then = Date.parse(time);
    if (!time || Number.isNaN(then)) return "";
    const seconds = Math.max(0, Math.floor((Date.now() - then) / 1000));
    for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) if (seconds >= size) return Math.floor(seconds / size) + unit;
    return seconds + "s";
  }

  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
    return q.toString();
  }

  // --- the Apps list ---------------------------------------------------------------------------------------------
  function listPage() {
    const rows = new Map();
    let source = null;
    const live = document.getElementById("live");

    function render() {
      const keys = [...rows.keys()].sort();
      fillTable("apps", keys.map((k) => rows.get(k)), (r) => {
        const name = el("td");
        const link = el("a", r.name);
        link.href = base + "app?" + query({ key: r.key });
        name.append(link);
        const state = el("td", r.state, "state-" + r.state);
        const num = (n) => el("td", n, "num");
        return [r.kind, r.namespace, name, state, r.lastDeploy ? ago(r.lastDeploy) + " ago" : "never", ago(r.created),
          r.driftPolicy, num(r.drifted), num(r.ghostDiffs), r.description];
      });
      document.getElementById("empty").hidden = rows.size > 0;
    }

    function hidden(list) {
      const box = document.getElementById("hidden");
      box.replaceChildren(...list.map((text) => el("p", text)));
    }

    function connect() {
      if (source) source.close();
      const form = document.getElementById("filters");
      const params = Object.fromEntries(new FormData(form).entries());
      source = new EventSource(base + "events?" + query(params));
      source.addEventListener("snapshot", (e) => {
        const data = JSON.parse(e.data);
        rows.clear();
        for (const r of data.rows) rows.set(r.key, r);
        hidden(data.hidden);
        render();
        live.textContent = "Live: " + rows.size + " shown, updated " + new Date().toLocaleTimeString();
      });
      source.addEventListener("row", (e) => {
        const r = JSON.parse(e.data);
        rows.set(r.key, r);
        render();
        live.textContent = "Live: " + rows.size + " shown, updated " + new Date().toLocaleTimeString();
      });
      source.addEventListener("gone", (e) => {
        rows.delete(JSON.parse(e.data).key);
        render();
      });
      source.addEventListener("hidden", (e) => hidden(JSON.parse(e.data)));
      source.onerror = () => { live.textContent = "Connection lost: reconnecting…"; };
    }

    setInterval(render, 10000);  // the ages move on
    let timer = 0;
    document.getElementById("filters").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(connect, 250);
    });
    document.getElementById("filters").addEventListener("submit", (e) => e.preventDefault());
    connect();
  }

  // --- one App's page --------------------------------------------------------------------------------------------
  function appPage() {
    const key = new URLSearchParams(location.search).get("key") || "";
    const live = document.getElementById("live");
    let pending = 0;

    function summary(r) {
      const dl = document.getElementById("summary");
      dl.replaceChildren();
      const items = [["Kind", r.kind + " (" + r.group + ")"], ["State", r.state], ["Description", r.description],
        ["Last deploy", r.lastDeploy ? r.lastDeploy + " (" + ago(r.lastDeploy) + " ago)" : "never"], ["Age", ago(r.created)],
        ["Paused", r.paused ? "yes" : "no"], ["Canceled", r.canceled ? "yes" : "no"], ["Drift policy", r.driftPolicy]];
      for (const [k, v] of items) dl.append(el("dt", k), el("dd", v));
    }

    function stages(parts) {
      const box = document.getElementById("stages");
      box.replaceChildren();
      for (const [name, part] of Object.entries(parts)) {
        box.append(el("h3", name + " (exit code " + part.exitCode + ", " + part.updatedAt + ")"));
        if (part.error) box.append(el("p", part.error, "error"));
        const text = [part.stdout, part.stderr].filter(Boolean).join("\n");
        if (text) { const pre = el("pre", text); pre.tabIndex = 0; box.append(pre); }
      }
    }

    function diffCell(diff) {
      const td = el("td");
      if (!diff) return td;
      const details = el("details");
      details.append(el("summary", "diff"));
      const pre = el("pre", diff);
      pre.tabIndex = 0;
      details.append(pre);
      td.append(details);
      return td;
    }

    // A change that kept what it applied (or, when the user may not list Secrets, any change: the preview says why
    // not) offers "Roll back to this change": its diff from the live state first, then a confirmation.
    function rollbackCell(h) {
      const td = el("td");
      if (h.kept === false) { td.textContent = "not kept"; return td; }
      const button = el("button", "Roll back to this change");
      button.type = "button";
      button.setAttribute("aria-label", "Roll back to this change: " + h.name);
      button.addEventListener("click", () => previewRollback(h.name));
      td.append(button);
      return td;
    }

    function installRollbackCell(r) {
      const td = el("td");
      const button = el("button", "Roll back to this revision");
      button.type = "button";
      button.setAttribute("aria-label", "Roll back to revision " + r.revision);
      button.addEventListener("click", () => previewInstallRollback(r.revision));
      td.append(button);
      return td;
    }

    // a PackageInstall's revisions (number, version, when, values digest: never values)
    function revisions(data) {
      const section = document.getElementById("revisions-section");
      section.hidden = !("revisions" in data);
      if (section.hidden) return;
      fillTable("revisions", data.revisions, (r) => [String(r.revision), r.version, r.created, r.digest,
        installRollbackCell(r)]);
    }

    async function load() {
      const answer = await fetch(base + "api/app?" + query({ key }), { cache: "no-store" });
      const data = await answer.json();
      if (data.error) { live.textContent = data.error; return; }
      const r = data.row;
      document.title = "kapply dashboard: " + r.kind + " " + r.namespace + "/" + r.name;
      document.getElementById("title").textContent = r.kind + " " + r.namespace + "/" + r.name;
      summary(r);
      fillTable("conditions", data.conditions, (c) => [c.type, c.status, c.message || ""]);
      const writer = (f) => f.writtenBy || "";
      fillTable("drift", data.drift, (f) => [f.resource, f.path, f.desired, f.live, writer(f)]);
      fillTable("ghosts", data.ghostDiffs, (f) => [f.resource, f.path, f.desired, "live" in f ? f.live : "not seen since " + f.lastSeen,
        writer(f), f.recurrences, f.firstSeen, f.lastSeen]);
      document.getElementById("suggested").textContent = data.suggestedConfig || "(none)";
      document.getElementById("copy-suggested").disabled = !data.suggestedConfig;
      stages(data.stages);
      document.getElementById("tree").textContent = typeof data.tree === "string" ? data.tree : data.tree.error;
      fillTable("events", data.events, (e) => [e.lastTimestamp, e.type, e.reason, e.count, e.message]);
      fillTable("history", data.history, (h) => [h.name, h.startedAt, h.finishedAt,
        h.successful === null ? "" : h.successful ? "yes" : "no", h.description, diffCell(h.diff), rollbackCell(h)]);
      revisions(data);
      live.textContent = "Live: updated " + new Date().toLocaleTimeString();
    }

    function reload() {
      clearTimeout(pending);
      pending = setTimeout(load, 200);
    }

    const source = new EventSource(base + "events?" + query({ key }));
    source.addEventListener("row", reload);
    source.addEventListener("gone", () => { live.textContent = "This App is gone"; });
    source.onerror = () => { live.textContent = "Connection lost: reconnecting…"; };

    const words = { kick: "Sync this App now", pause: "Pause this App's reconciliation", resume: "Resume this App's reconciliation" };
    const dialog = document.getElementById("confirm");
    let chosen = "";
    for (const button of document.querySelectorAll("button[data-action]")) {
      button.addEventListener("click", () => {
        chosen = button.dataset.action;
        document.getElementById("confirm-text").textContent = words[chosen] + "?";
        dialog.showModal();
      });
    }
    document.getElementById("confirm-no").addEventListener("click", () => dialog.close());
    // POST an action (`params`: its name and the change a rollback goes to), saying `working` until it answers
    async function act(working, params) {
      const result = document.getElementById("action-result");
      result.textContent = working;
      try {
        const answer = await fetch(base + "api/action?" + query({ key, ...params }), {
          method: "POST", headers: { "X-Kapply-CSRF": csrf }, cache: "no-store" });
        const data = await answer.json();
        result.textContent = data.message;
        result.className = data.ok ? "" : "error";
      } catch (e) {
        result.textContent = "Failed: " + e;
        result.className = "error";
      }
      reload();
    }
    document.getElementById("confirm-yes").addEventListener("click", async () => {
      dialog.close();
      await act("Working…", { action: chosen });
    });
    const rollbackDialog = document.getElementById("rollback");
    let rollbackTo = "";
    async function previewRollback(change) {
      const result = document.getElementById("action-result");
      result.textContent = "Planning the rollback to " + change + "…";
      result.className = "";
      try {
        const answer = await fetch(base + "api/rollback?" + query({ key, change }), { cache: "no-store" });
        const data = await answer.json();
        if (!data.ok) { result.textContent = data.message; result.className = "error"; return; }
        result.textContent = "";
        rollbackTo = change;
        document.getElementById("rollback-text").textContent = "Roll back to app change " + change + "?" +
          (data.pending ? " It changes what the diff below shows:" : " It changes nothing on the cluster.");
        document.getElementById("rollback-diff").textContent = data.diff;
        rollbackDialog.showModal();
      } catch (e) {
        result.textContent = "Failed: " + e;
        result.className = "error";
      }
    }
    document.getElementById("rollback-no").addEventListener("click", () => rollbackDialog.close());
    document.getElementById("rollback-yes").addEventListener("click", async () => {
      rollbackDialog.close();
      await act("Rolling back to " + rollbackTo + "…", { action: "rollback", change: rollbackTo });
    });
    const installDialog = document.getElementById("install-rollback");
    let revisionTo = "";
    async function previewInstallRollback(revision) {
      const result = document.getElementById("action-result");
      result.textContent = "Planning the rollback to revision " + revision + "…";
      result.className = "";
      try {
        const answer = await fetch(base + "api/install-rollback?" + query({ key, revision }), { cache: "no-store" });
        const data = await answer.json();
        if (!data.ok) { result.textContent = data.message; result.className = "error"; return; }
        result.textContent = "";
        revisionTo = String(revision);
        document.getElementById("install-rollback-text").textContent = "Roll back to revision " + revision + "?";
        document.getElementById("install-rollback-plan").textContent = data.text;
        installDialog.showModal();
      } catch (e) {
        result.textContent = "Failed: " + e;
        result.className = "error";
      }
    }
    document.getElementById("install-rollback-no").addEventListener("click", () => installDialog.close());
    document.getElementById("install-rollback-yes").addEventListener("click", async () => {
      installDialog.close();
      await act("Rolling back to revision " + revisionTo + "…", { action: "install-rollback", revision: revisionTo });
    });
    document.getElementById("copy-suggested").addEventListener("click", async () => {
      const text = document.getElementById("suggested").textContent;
      try { await navigator.clipboard.writeText(text); live.textContent = "Suggested rule copied"; }
      catch (e) { live.textContent = "Copy failed: select the text and copy it"; }
    });
    load();
  }

  // --- packages: repositories, available packages (their versions grouped), installs ------------------------------
  function packagesPage() {
    const live = document.getElementById("live");

    async function load() {
      const data = await (await fetch(base + "api/packages", { cache: "no-store" })).json();
      document.getElementById("hidden").replaceChildren(...data.hidden.map((text) => el("p", text)));
      fillTable("repositories", data.repositories, (r) => [r.namespace, r.name, r.source, el("td", r.state, "state-" + r.state), r.description]);
      const versions = new Map();
      for (const p of data.packages) {
        const key = p.namespace + "\u0000" + p.refName;
        if (!versions.has(key)) versions.set(key, { namespace: p.namespace, refName: p.refName, versions: [] });
        versions.get(key).versions.push(p.version);
      }
      const grouped = [...versions.values()].sort((a, b) => (a.namespace + a.refName).localeCompare(b.namespace + b.refName));
      fillTable("packages", grouped, (p) => [p.namespace, p.refName, p.versions.join(", ")]);
      fillTable("installs", data.installs, (i) => {
        const name = el("td");
        const link = el("a", i.name);
        link.href = base + "app?" + query({ key: i.key });
        name.append(link);
        return [i.namespace, name, i.package, i.constraints, i.version, i.lastAttemptedVersion, el("td", i.state, "state-" + i.state)];
      });
      live.textContent = "Loaded " + new Date().toLocaleTimeString();
    }

    document.getElementById("refresh").addEventListener("click", load);
    load();
  }

  const page = document.body.dataset.page;
  if (page === "list") listPage(); else if (page === "packages") packagesPage(); else appPage();
})();
