// The site reads without this file. With it: one language at a time (remembered, and
// #ja opens a page in Japanese) and the diff toggles.
(() => {
  const root = document.documentElement;
  const KEY = "course-lang";
  const setLang = (lang) => {
    root.classList.remove("lang-en", "lang-ja");
    root.classList.add(`lang-${lang}`);
    root.lang = lang;
    for (const button of document.querySelectorAll("[data-lang]")) {
      button.setAttribute("aria-pressed", String(button.dataset.lang === lang));
    }
  };
  let stored = null;
  try {
    stored = localStorage.getItem(KEY);
  } catch {}
  const hash = location.hash;
  const wanted =
    hash === "#ja" || hash.startsWith("#ja-") ? "ja" : hash.startsWith("#en-") ? "en" : stored;
  root.classList.add("js");
  setLang(wanted === "ja" ? "ja" : "en");

  document.addEventListener("DOMContentLoaded", () => {
    setLang(root.classList.contains("lang-ja") ? "ja" : "en");
    for (const button of document.querySelectorAll("[data-lang]")) {
      button.addEventListener("click", () => {
        setLang(button.dataset.lang);
        try {
          localStorage.setItem(KEY, button.dataset.lang);
        } catch {}
      });
    }
    for (const tools of document.querySelectorAll(".diff-tools")) {
      tools.hidden = false;
      const files = () => tools.parentElement.querySelectorAll("details.file");
      for (const button of tools.querySelectorAll("[data-diff]")) {
        button.addEventListener("click", () => {
          const action = button.dataset.diff;
          if (action === "wrap") {
            tools.parentElement.classList.toggle("wrap");
            button.setAttribute(
              "aria-pressed",
              String(tools.parentElement.classList.contains("wrap")),
            );
            return;
          }
          for (const file of files()) file.open = action === "expand";
        });
      }
    }
  });
})();
