"""The verdict for people and CI: report data, the self-contained HTML, JUnit."""
