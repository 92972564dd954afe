/* lib */
window.lib = {version: 1};
