public enum ProjectionsPlaceholder {}
