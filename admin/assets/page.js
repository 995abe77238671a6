// kbroker status page: refreshes itself every two seconds by fetching the
// page again and swapping the live part, keeping expanded rows open and
// the scroll position. Pause stops it. Without JavaScript the page
// reloads itself every five seconds (the noscript refresh).
(() => {
  "use strict";
  const every = 2000;
  const open = new Set();
  let paused = false;
  let timer = 0;
  let refreshes = 0;

  // Rows toggle their detail row; the set of open ones survives refreshes.
  function wire(root) {
    for (const row of root.querySelectorAll("tr.row[data-toggle]")) {
      const id = row.dataset.toggle;
      const detail = document.getElementById(id);
      if (!detail) continue;
      if (open.has(id)) { detail.hidden = false; row.classList.add("open"); }
      row.addEventListener("click", () => {
        detail.hidden = !detail.hidden;
        row.classList.toggle("open", !detail.hidden);
        if (detail.hidden) open.delete(id); else open.add(id);
      });
    }
  }

  async function refresh() {
    timer = 0;
    if (paused) return;
    try {
      const res = await fetch(location.pathname, { cache: "no-store" });
      if (res.ok) {
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        for (const id of ["live", "facts", "updated"]) {
          const fresh = doc.getElementById(id), cur = document.getElementById(id);
          if (fresh && cur) cur.replaceWith(fresh);
        }
        wire(document.getElementById("live"));
        document.body.classList.remove("stale");
        // Counted on the root element: tests (and the curious) can see
        // that the page refreshes itself.
        document.documentElement.dataset.refreshed = String(++refreshes);
      }
    } catch (e) {
      document.body.classList.add("stale"); // the broker is down or restarting
    }
    schedule();
  }

  function schedule() {
    if (!paused && !timer) timer = setTimeout(refresh, every);
  }

  document.addEventListener("DOMContentLoaded", () => {
    wire(document);
    const pause = document.getElementById("pause");
    pause.addEventListener("click", () => {
      paused = !paused;
      pause.setAttribute("aria-pressed", String(paused));
      pause.textContent = paused ? "Resume" : "Pause";
      if (!paused) refresh();
    });
    document.addEventListener("visibilitychange", () => { if (!document.hidden) schedule(); });
    schedule();
  });
})();
