// The header's session controls: "Log out" posts /logout with the CSRF token, then shows the login page.
import { headersFor, showError } from "./api.js";

const form = document.getElementById("logout");
if (form) {
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const res = await fetch("/logout", { method: "POST", headers: headersFor("POST"), redirect: "manual" });
      if (res.status >= 400) throw new Error(`could not log out (HTTP ${res.status})`);
      location.assign("/login");
    } catch (err) { showError(err); }
  });
}
