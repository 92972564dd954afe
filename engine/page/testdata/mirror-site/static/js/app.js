/* app */
document.title = document.title + " (js ran)";
