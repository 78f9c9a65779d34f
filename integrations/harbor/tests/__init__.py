"""Tests of the Harbor adapter: python3 -m unittest discover -s integrations/harbor/tests"""
