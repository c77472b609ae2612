// The console's entry point (docs/console.md).
import "./app.css";
import { render } from "preact";
import { Shell } from "./app/shell";

render(<Shell />, document.getElementById("app")!);
